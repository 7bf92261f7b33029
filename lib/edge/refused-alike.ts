// When two refusals count as the same one: the ledger coalesces them into one entry with a count,
// and the request log folds them into one line per window. One definition, so both agree.

/**
 * The key of a refusal: the client's limiter key (an IPv6 /64 is one client), the status, the
 * error code, the hook and, for a signed hook, the kind of signature failure. Alike refusals share it.
 */
export function refusalKey(
  clientKey: string,
  status: number,
  code: string | undefined,
  hook: string | null | undefined,
  why: string | undefined,
): string {
  return `${clientKey} ${status} ${code ?? ''} ${hook ?? ''} ${why ?? ''}`;
}

// IP and CIDR parsing, the client address behind trusted proxies, the limiter key (/64 for IPv6).

/** An IP address: 4 bytes for family 4, 16 bytes for family 6. */
export interface Ip {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

/** A network: its address with the host bits cleared and its prefix length in bits. */
export interface Cidr extends Ip {
  readonly prefix: number;
}

const _DECIMAL = /^(0|[1-9]\d{0,2})$/;
const _HEX_GROUP = /^[0-9a-f]{1,4}$/i;
// RFC 6874 lets a zone id use only unreserved characters
const _ZONE = /^[\w.~-]+$/;

function _parseV4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (const [i, part] of parts.entries()) {
    if (!_DECIMAL.test(part) || Number(part) > 255) return null;
    bytes[i] = Number(part);
  }
  return bytes;
}

function _parseGroups(text: string, v4TailAllowed: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (v4TailAllowed && i === parts.length - 1 && part.includes('.')) {
      const v4 = _parseV4(part);
      if (!v4) return null;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (_HEX_GROUP.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return null;
    }
  }
  return groups;
}

function _parseV6(text: string): Uint8Array | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  const head = _parseGroups(halves[0]!, !compressed);
  const tail = compressed ? _parseGroups(halves[1]!, true) : [];
  if (!head || !tail) return null;
  // "::" stands for at least one zero group; without it all eight must be written
  const fill = 8 - head.length - tail.length;
  if (compressed ? fill < 1 : fill !== 0) return null;
  const groups = [...head, ...new Array<number>(fill).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  for (const [i, group] of groups.entries()) {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  }
  return bytes;
}

function _isMapped(bytes: Uint8Array): boolean {
  return bytes.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

// How many of the 8 bits of byte `index` fall inside a prefix of `prefix` bits
function _bitsIn(prefix: number, index: number): number {
  return Math.min(8, Math.max(0, prefix - 8 * index));
}

function _mask(bytes: Uint8Array, prefix: number): Uint8Array {
  return bytes.map((b, i) => b & (0xff << (8 - _bitsIn(prefix, i))));
}

/**
 * Parses a strict IPv4 dotted quad or an IPv6 address (optionally in brackets, with a
 * zone that is dropped); IPv4-mapped IPv6 addresses come back as family 4.
 */
export function parseIp(text: string): Ip | null {
  let rest = text;
  const bracketed = rest.startsWith('[') && rest.endsWith(']');
  if (bracketed) rest = rest.slice(1, -1);
  if (!rest.includes(':')) {
    const v4 = bracketed ? null : _parseV4(rest);
    return v4 && { family: 4, bytes: v4 };
  }
  const percent = rest.indexOf('%');
  if (percent !== -1) {
    if (!_ZONE.test(rest.slice(percent + 1))) return null;
    rest = rest.slice(0, percent);
  }
  const bytes = _parseV6(rest);
  if (!bytes) return null;
  // Folded so that a dual-stack socket's "::ffff:10.0.0.1" matches 10.0.0.0/8 and keys like 10.0.0.1
  return _isMapped(bytes) ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
}

/**
 * Parses "address/prefix" or a bare address (a /32 or /128); host bits are cleared.
 * An IPv4-mapped network such as "::ffff:10.0.0.0/104" becomes 10.0.0.0/8.
 */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const ip = parseIp(address);
  if (!ip) return null;
  const max = ip.bytes.length * 8;
  if (slash === -1) return { ...ip, prefix: max };
  const digits = text.slice(slash + 1);
  if (!_DECIMAL.test(digits)) return null;
  // A mapped network written in IPv6 form counts its prefix over 128 bits; shorter than
  // /96 it would reach beyond the mapped range, which folding cannot represent
  const prefix = Number(digits) - (ip.family === 4 && address.includes(':') ? 96 : 0);
  if (prefix < 0 || prefix > max) return null;
  return { family: ip.family, bytes: _mask(ip.bytes, prefix), prefix };
}

/** Whether the address lies inside the network; families never match across. */
export function matchCidr(ip: Ip, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  for (let i = 0; i < ip.bytes.length; i++) {
    const bits = _bitsIn(cidr.prefix, i);
    if (bits === 0) break;
    if ((ip.bytes[i]! ^ cidr.bytes[i]!) >> (8 - bits) !== 0) return false;
  }
  return true;
}

/** Whether the address lies inside any of the networks. */
export function inAny(ip: Ip, cidrs: readonly Cidr[]): boolean {
  return cidrs.some((cidr) => matchCidr(ip, cidr));
}

/** Canonical text: IPv4 dotted, IPv6 per RFC 5952 (lower case, longest zero run compressed). */
export function formatIp(ip: Ip): string {
  const b = ip.bytes;
  if (ip.family === 4) return b.join('.');
  if (_isMapped(b)) return `::ffff:${b.subarray(12).join('.')}`;
  const groups = Array.from({ length: 8 }, (_, i) => ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16));
  // RFC 5952 4.2.2 and 4.2.3: only runs of two or more zero groups, the first on a tie
  let start = -1;
  let length = 1;
  for (let i = 0; i < 8; i++) {
    let end = i;
    while (end < 8 && groups[end] === '0') end++;
    if (end - i > length) [start, length] = [i, end - i];
    i = Math.max(i, end);
  }
  if (start === -1) return groups.join(':');
  return `${groups.slice(0, start).join(':')}::${groups.slice(start + length).join(':')}`;
}

/**
 * The client's address as canonical text. X-Forwarded-For is believed only when the peer is
 * trusted: walking right to left, the first untrusted hop is the client. The walk stops at
 * the left end or at an entry that is not an IP (empty entries are skipped); the client is
 * then the last hop read, which is a trusted proxy, or the peer if none was read.
 * An absent or unparseable peer yields "unknown".
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | readonly string[] | undefined,
  trusted: readonly Cidr[],
): string {
  const peerIp = peer === undefined ? null : parseIp(peer);
  if (!peerIp) return 'unknown';
  return formatIp(_forwarded(peerIp, forwardedFor, trusted));
}

function _forwarded(peerIp: Ip, forwardedFor: string | readonly string[] | undefined, trusted: readonly Cidr[]): Ip {
  if (forwardedFor === undefined || !inAny(peerIp, trusted)) return peerIp;
  const hops = (typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')).split(',');
  let client = peerIp;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!.trim();
    if (hop === '') continue;
    const ip = parseIp(hop);
    // Past garbage nothing is attributable, so keep the nearest hop we could read
    if (!ip) break;
    client = ip;
    if (!inAny(ip, trusted)) break;
  }
  return client;
}

/** A client as the edge sees it: its address as `clientAddress` gives it, and its limiter key as `clientKey` gives it. */
export interface Client {
  readonly address: string;
  readonly key: string;
}

const _UNKNOWN: Client = { address: 'unknown', key: 'unknown' };

function _client(ip: Ip): Client {
  const address = formatIp(ip);
  return { address, key: ip.family === 4 ? address : `${formatIp({ family: 6, bytes: _mask(ip.bytes, 64) })}/64` };
}

// A socket's peer never changes: its parse and its Client are made once per connection, not per request.
const _peers = new WeakMap<object, { ip: Ip | null; client: Client }>();

/**
 * The client of a request on `socket`, the same as `clientAddress` and `clientKey` would give,
 * with each address parsed once (the peer once per connection).
 */
export function requestClient(
  socket: { readonly remoteAddress?: string | undefined },
  forwardedFor: string | readonly string[] | undefined,
  trusted: readonly Cidr[],
): Client {
  let peer = _peers.get(socket);
  if (peer === undefined) {
    const ip = socket.remoteAddress === undefined ? null : parseIp(socket.remoteAddress);
    peer = { ip, client: ip === null ? _UNKNOWN : _client(ip) };
    // An address not yet known (a socket already closed) is not worth remembering.
    if (socket.remoteAddress !== undefined) _peers.set(socket, peer);
  }
  if (peer.ip === null || forwardedFor === undefined) return peer.client;
  const ip = _forwarded(peer.ip, forwardedFor, trusted);
  return ip === peer.ip ? peer.client : _client(ip);
}

/**
 * The rate-limiter key for a client address: IPv4 as its dotted quad, IPv6 as its /64
 * (e.g. "2001:db8:1:2::/64") so a host cannot rotate through its subnet; anything else unchanged.
 */
export function clientKey(address: string): string {
  const ip = parseIp(address);
  if (!ip) return address;
  if (ip.family === 4) return formatIp(ip);
  return `${formatIp({ family: 6, bytes: _mask(ip.bytes, 64) })}/64`;
}

import { readFile } from 'node:fs/promises';
import { parseJsonc } from '../jsonc.ts';

/** A config file read and parsed (JSONC), or the one problem that stopped it. */
export type Read = { ok: true; value: unknown } | { ok: false; problems: string[] };

/** Reads and parses a config file. A missing file is a problem like any other. */
export async function readConfigFile(file: string): Promise<Read> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return { ok: false, problems: [`cannot read ${file}: ${unreadable(error)}`] };
  }
  const parsed = parseJsonc(text);
  return parsed.ok ? parsed : { ok: false, problems: [`${file}: ${parsed.error}`] };
}

/** Why a file could not be read, in words (`no such file`), not an errno code. */
export function unreadable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT': return 'no such file';
    case 'EACCES':
    case 'EPERM': return 'permission denied';
    case 'EISDIR': return 'is a directory';
    case 'ENOTDIR': return 'a part of the path is not a directory';
    default: return code ?? (error instanceof Error ? error.message : String(error));
  }
}

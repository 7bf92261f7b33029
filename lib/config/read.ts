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
    return { ok: false, problems: [`${file}: cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`] };
  }
  const parsed = parseJsonc(text);
  return parsed.ok ? parsed : { ok: false, problems: [`${file}: ${parsed.error}`] };
}

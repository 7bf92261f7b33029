// What every `requests` subcommand shares: the filters its flags name, and the ledger it reads.

import {
  type DamagedLine,
  type EntryFilter,
  LedgerUnreadableError,
  parseStatus,
  parseTime,
  readLedger,
} from '../store/ledger/read.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Flags } from './command.ts';
import { escapeControls } from '../text.ts';
import { type Io, messagePrefix } from './io.ts';
import { usedStateDir } from './state-dir.ts';
import { readRoots } from '../store/journal/read.ts';
import type { RootRecords } from './failures.ts';

/** The options every `requests` subcommand takes to pick entries. */
export const FILTER_OPTIONS = {
  hook: { type: 'string' },
  status: { type: 'string' },
  code: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  failed: { type: 'boolean' },
} as const;

/** The filter the flags name, or a usage problem. */
export function filterFrom(flags: Flags, now: number): EntryFilter | string {
  const filter: EntryFilter = {};
  if (flags.hook !== undefined) filter.hook = flags.hook;
  if (flags.code !== undefined) {
    if (!/^ERR_[A-Z_]+$/.test(flags.code)) {
      return `--code must be an error code such as ERR_UNAUTHORIZED, got "${flags.code}"`;
    }
    filter.code = flags.code;
  }
  if (flags.status !== undefined) {
    const status = parseStatus(flags.status);
    if (status === null) return `--status must be a status such as 401 or a class such as 4xx, got "${flags.status}"`;
    filter.status = status;
  }
  for (const key of ['since', 'until'] as const) {
    const text = flags[key];
    if (text === undefined) continue;
    const time = parseTime(text, now);
    if (time === null) {
      return `--${key} must be an ISO time (2026-11-26T10:00Z) or a time back from now (15m, 2h, 7d), got "${text}"`;
    }
    filter[key] = time;
  }
  if (flags.failed === true) filter.failed = true;
  return filter;
}

/** The ledger of a state directory, and the journal's records of the requests replayed or resolved. */
export interface LedgerAccess {
  dir: string;
  read: () => Promise<LedgerEntry[] | null>;
  /** Read from the journal, as the CLI reads it: without the server, and while it runs. */
  roots: () => Promise<RootRecords>;
}

/** Reads the ledger of the state directory the flags name; `null` after saying why not (stderr). */
export async function ledgerOf(flags: Flags, io: Io): Promise<LedgerAccess | null> {
  const dir = await usedStateDir(flags, io);
  if (dir === null) return null;
  const said = new Set<string>();
  const damaged = ({ file, line, problem }: DamagedLine) => {
    const key = `${file}:${line}`;
    if (said.has(key)) return;
    said.add(key);
    io.stderr(`${messagePrefix(io)}: ledger file ${file} line ${line} skipped: ${escapeControls(problem, false)}\n`);
  };
  const read = async () => {
    try {
      return await readLedger(dir, damaged);
    } catch (error) {
      if (!(error instanceof LedgerUnreadableError)) throw error;
      io.stderr(`${messagePrefix(io)}: ${error.message}\n`);
      return null;
    }
  };
  return { dir, read, roots: () => readRoots(dir) };
}

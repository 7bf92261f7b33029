// What a command is: options, help text, run.

import type { ParseArgsConfig } from 'node:util';
import type { Io } from './io.ts';

/** The flags any command may receive, as `parseArgs` returns them. */
export interface Flags {
  hook?: string;
  body?: string;
  header?: string[];
  id?: string;
  send?: string;
  channel?: string;
  to?: string;
  config?: string;
  host?: string;
  port?: string;
  'state-dir'?: string;
  json?: boolean;
  open?: boolean;
  follow?: boolean;
  limit?: string;
  raw?: boolean;
  status?: string;
  code?: string;
  since?: string;
  until?: string;
  failed?: boolean;
  all?: boolean;
  yes?: boolean;
  'dry-run'?: boolean;
  force?: boolean;
  request?: string;
  'log-format'?: string;
  timeout?: string;
  help?: boolean;
}

/** One command of the CLI: its options, its help text, and what it does. */
export interface Command {
  options: NonNullable<ParseArgsConfig['options']>;
  /** Whether the command takes positional arguments. */
  positionals?: boolean;
  help: string;
  run(flags: Flags, positionals: string[], io: Io): Promise<number>;
}

/** `--config` and `--help`, which every command takes. */
export const COMMON = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

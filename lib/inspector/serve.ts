// serve's part for the inspector page: its listener (or the socket systemd named for it), the
// page over the ledger, and the control channel's `inspect.login`.

import type { Config } from '../config/types.ts';
import { createInspector, type InspectorSource } from './listener.ts';
import { ledgerSource, type LedgerSourceOptions } from './source.ts';
import { listen, type Running } from '../edge/listen.ts';
import { inheritedInspectorFd } from '../edge/systemd.ts';
import type { Logger } from '../log.ts';
import { lookupEntry } from '../store/ledger/find.ts';
import { type DamagedLine, LedgerTail } from '../store/ledger/read.ts';
import type { Store } from '../store/journal/store.ts';
import type { Env } from '../config/types.ts';

/** What the server's `inspect.login` operation answers. */
export interface InspectLogin {
  url: string;
  expiresAt: string;
}

/** A running inspector: its address, a login link when asked, and its stop. */
export interface RunningInspector {
  url: string;
  login(): InspectLogin;
  close(): Promise<void>;
}

export interface InspectorParts {
  config: NonNullable<Config['inspector']>;
  stateDir: string;
  env: Env;
  log: Logger;
  store:
    & Pick<Store, 'run' | 'events' | 'outboxEntry' | 'notice' | 'root' | 'changes'>
    & Partial<Pick<Store, 'dropped'>>;
  replay: InspectorSource['replay'];
  resolve?: InspectorSource['resolve'];
  retry?: InspectorSource['retry'];
  redeliver?: InspectorSource['redeliver'];
  /** Which request took a failed entry's delivery id (App.takenJudge). */
  takenJudge?: LedgerSourceOptions['takenJudge'];
  /** Each hook's work now (the page's list of hooks). */
  hooks?: LedgerSourceOptions['hooks'];
  /** A hook paused or resumed from the page (lib/server/pauses.ts). */
  pause?: InspectorSource['pause'];
}

/** Starts the inspector's listener; throws when it cannot listen. */
export async function startInspector(parts: InspectorParts): Promise<RunningInspector> {
  const { config, log } = parts;
  const damaged = (damaged: DamagedLine) =>
    log.warn('ledger line skipped', { file: damaged.file, line: damaged.line, problem: damaged.problem });
  const tail = new LedgerTail(parts.stateDir, damaged);
  const find = (id: string) => lookupEntry(parts.stateDir, id, damaged);
  const inspector = createInspector({
    source: {
      ...ledgerSource({
        tail,
        find,
        store: parts.store,
        replay: parts.replay,
        ...(parts.resolve === undefined ? {} : { resolve: parts.resolve }),
        ...(parts.retry === undefined ? {} : { retry: parts.retry }),
        ...(parts.redeliver === undefined ? {} : { redeliver: parts.redeliver }),
        ...(parts.takenJudge === undefined ? {} : { takenJudge: parts.takenJudge }),
        ...(parts.hooks === undefined ? {} : { hooks: parts.hooks }),
      }),
      ...(parts.pause === undefined ? {} : { pause: parts.pause }),
    },
    log,
    idleMs: config.idleMinutes * 60_000,
    maxAgeMs: config.maxSessionHours * 3_600_000,
    // `Host` may also name the address it is bound to: a loopback address other than 127.0.0.1
    // (127.0.0.2) is reached by that name, as is a deliberate non-loopback bind (`check` refuses any other).
    extraHosts: [config.bind],
  });
  const fd = inheritedInspectorFd(parts.env, process.pid);
  const running: Running = await listen(inspector, fd !== null ? { fd } : { host: config.bind, port: config.port });
  const port = Number(new URL(running.url).port);
  inspector.bound(port);
  // The link names the loopback address the page is reached by, whatever the bind.
  const origin = running.url.startsWith('http://unix:') || fd !== null ? `http://127.0.0.1:${port}` : running.url;
  return {
    url: running.url,
    login() {
      const { path, expiresAt } = inspector.login();
      return { url: `${origin}${path}`, expiresAt: new Date(expiresAt).toISOString() };
    },
    close: () => running.close(2_000),
  };
}

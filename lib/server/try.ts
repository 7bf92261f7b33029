// The server's side of `hooks-ingress try` (the command is lib/cli/try.ts): a preview of a request,
// with the config file's text the CLI sent tried as a reload would read it, in the server's
// environment and transform sandbox. serve imports this file at the first `try`.

import type { IncomingHttpHeaders } from 'node:http';
import type { Preview, PreviewInput } from '../edge/preview.ts';
import type { App } from '../edge/server.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Route } from '../model/records.ts';
import type { Reloader } from './reload-plan.ts';
import type { ReloadChanges } from './reloads.ts';

/** What the CLI sends: the body as base64, so any bytes pass through JSON unchanged; `config`: the config file's text. */
export interface TryArgs {
  hook: string;
  headers: Record<string, string | string[]>;
  query: string;
  body: string;
  config?: string;
}

/** What the server says of the config text it tried: the file it read it as, and what a reload of it would change. */
export interface TriedConfig {
  file: string;
  /** Whether it differs from what the server runs in any key or transform module. */
  differs: boolean;
  changes: ReloadChanges;
  needsRestart: string[];
}

/** The server's answer to `try`: a preview (with what it tried as the config file), or the file's problems. */
export type TryAnswer = (Preview & { configFile?: TriedConfig }) | {
  configRefused: { file: string; problems: string[] };
};

/** What the server's side of `try` works with. */
export interface TryParts {
  app: Pick<App, 'preview'>;
  reloader: Pick<Reloader, 'plan' | 'file'>;
  lastRoute: () => Route | null;
}

/** The server's side of `try`. */
export function tryOperation(parts: TryParts): (args: unknown) => Promise<TryAnswer> {
  return async (raw) => {
    const args = raw as Partial<TryArgs> | null;
    if (
      typeof args !== 'object' || args === null || typeof args.hook !== 'string' || typeof args.body !== 'string' ||
      typeof args.query !== 'string' || typeof args.headers !== 'object' || args.headers === null
    ) {
      throw new HttpError(400, ErrorCode.InvalidPayload, 'try: hook, headers, query and body are required');
    }
    const input: PreviewInput = {
      name: args.hook,
      headers: args.headers as IncomingHttpHeaders,
      rawQuery: args.query,
      bytes: Buffer.from(args.body, 'base64'),
    };
    if (typeof args.config !== 'string') return parts.app.preview(input);
    const { file } = parts.reloader;
    const plan = await parts.reloader.plan(args.config);
    if (!plan.ok) return { configRefused: { file, problems: plan.problems } };
    const configFile: TriedConfig = {
      file,
      differs: plan.differs,
      changes: plan.changes,
      needsRestart: plan.needsRestart,
    };
    // Loaded here, not with the command: a CLI that only reads loads no server code.
    const [{ serviceTransforms, usesTransforms }, { previewHook }] = await Promise.all([
      import('./transforms.ts'),
      import('../edge/preview.ts'),
    ]);
    // The same as what runs: tried on it. Not with transforms: a file a module imports is not compared.
    if (!plan.differs && !usesTransforms(plan.next.config)) return { ...(await parts.app.preview(input)), configFile };
    const transforms = serviceTransforms({ info() {}, warn() {}, error() {} });
    await transforms.configure(plan.next.config);
    try {
      return {
        ...(await previewHook(
          { config: plan.next.config, transforms: transforms.call, lastRoute: parts.lastRoute },
          input,
        )),
        configFile,
      };
    } finally {
      await transforms.close();
    }
  };
}

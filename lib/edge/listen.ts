// The listening socket of the hooks port (and of the inspector's): an address or a socket inherited
// from systemd, and its close, which lets requests in flight finish within a grace time.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A started server and how to stop it. */
export interface Running {
  server: Server;
  url: string;
  /** Stops accepting, lets requests in flight finish (bounded by `graceMs`), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}

/** Where to listen: an address (port 0 takes a free one), or a socket inherited from systemd. */
export type ListenTarget = { host: string; port: number } | { fd: number };

/** Listens with the given request listener. */
export async function listen(
  app: (req: IncomingMessage, res: ServerResponse) => void,
  target: ListenTarget,
): Promise<Running> {
  const server = createServer(app);
  // Handled by the app, which invites the body only once the request passed authentication.
  server.on('checkContinue', app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if ('fd' in target) server.listen({ fd: target.fd }, ready);
    else server.listen(target.port, target.host, ready);
  });
  const address = server.address() as AddressInfo | string | null;
  let url: string;
  if (address === null || typeof address === 'string') url = `http://unix:${address ?? 'inherited socket'}`;
  else {url = `http://${
      address.family === 'IPv6' || address.address.includes(':') ? `[${address.address}]` : address.address
    }:${address.port}`;}
  return {
    server,
    url,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

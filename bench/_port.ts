// A free loopback port, for a server that cannot be told to take port 0 and say which.
import { type AddressInfo, createServer } from 'node:net';

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

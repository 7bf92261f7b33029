// What the bench's own servers share: listen on a free loopback port, say where on stdout (the
// bench waits for that line), and stop on SIGTERM or SIGINT. Started as the coldstart scenario
// starts hooks-ingress, they listen where it does: on the socket systemd passes (LISTEN_FDS, fd 3),
// or on the port given by BENCH_PORT.
export function listenOnLoopback(server) {
  const say = () => {
    const address = server.address();
    process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
  };
  if (process.env.LISTEN_FDS === '1' && process.env.LISTEN_PID === String(process.pid)) server.listen({ fd: 3 }, say);
  else server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', say);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// What the bench's own servers share: listen on a free loopback port, say where on stdout (the
// bench waits for that line), and stop on SIGTERM or SIGINT.
export function listenOnLoopback(server) {
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

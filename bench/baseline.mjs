// The benchmark's baseline: the least a node:http JSON endpoint can do (read the body, parse
// it, answer 200). hooks-ingress is measured as a ratio to this, so keep it bare.
import { createServer } from 'node:http';
import { listenOnLoopback } from './_listen.mjs';

const OK = JSON.stringify({ ok: true });
const BAD = JSON.stringify({ ok: false, error: 'body: must be valid JSON' });

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let reply = OK;
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      reply = BAD;
    }
    res.writeHead(reply === OK ? 200 : 400, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(reply),
    });
    res.end(reply);
  });
});

listenOnLoopback(server);

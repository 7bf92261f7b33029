// The benchmark's 401 floor: the least a node:http server can do to refuse a wrong token the way
// hooks-ingress must (token from the Authorization header, hashed and compared in constant time;
// the failure counted per client in a sliding window; a JSON 401 carrying a request id; one JSON
// log line per request, written once per event-loop turn). Hand-written, with none of the
// service's routing, config or metrics: what it costs is what the 401's requirements cost here.
// Usage: node bench/floor.mjs CONFIG.json   (reads hooks.token and the failure window from it; never a token on the command line)
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { listenOnLoopback } from './_listen.mjs';
import { setImmediate } from 'node:timers';

// The one-shot hash where there is one (Node >= 20.12), as the service uses.
const digest = typeof crypto.hash === 'function'
  ? (text) => crypto.hash('sha256', text, 'buffer')
  : (text) => crypto.createHash('sha256').update(text).digest();
const { hooks } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const expected = digest(hooks.token);
const BODY = JSON.stringify({ ok: false, error: 'invalid hook token', code: 'ERR_UNAUTHORIZED' });
const WINDOW_MS = hooks.authRateLimit.windowSeconds * 1000;
// Failure times per client, oldest first; those before `head` have left the window (dropped in
// bulk, as the service does).
const failures = new Map();
// The ISO text of the last millisecond, reused as the service's logger does.
let lastMs = Number.NaN;
let lastIso = '';
const prefix = `${Math.random().toString(16).slice(2, 10)}-`;
let next = 0;
let held = '';
const flush = () => {
  const text = held;
  held = '';
  process.stderr.write(text);
};

const server = createServer((req, res) => {
  const started = performance.now();
  const id = `${prefix}${(next++).toString(16)}`;
  const match = /^bearer[ \t]+(\S.*)$/i.exec((req.headers.authorization ?? '').trim());
  const ok = match !== null && crypto.timingSafeEqual(digest(match[1].trim()), expected);
  const client = req.socket.remoteAddress ?? 'unknown';
  if (!ok) {
    const now = Date.now();
    let log = failures.get(client);
    if (log === undefined) failures.set(client, log = { times: [], head: 0 });
    log.times.push(now);
    while (now - log.times[log.head] >= WINDOW_MS) log.head++;
    if (log.head >= 64 && log.head * 2 >= log.times.length) {
      log.times.splice(0, log.head);
      log.head = 0;
    }
  }
  const status = ok ? 200 : 401;
  const body = ok ? '{"ok":true}' : BODY;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-request-id': id,
  });
  res.end(body);
  if (held === '') setImmediate(flush);
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  held += `${
    JSON.stringify({
      time: lastIso,
      level: 'info',
      msg: 'request',
      id,
      method: req.method,
      path: req.url,
      status,
      duration: Math.round((performance.now() - started) * 10) / 10,
      client,
    })
  }\n`;
});

listenOnLoopback(server);

/**
 * Makes docs/inspector.png: starts a real server with the inspector on, sends it a few requests
 * (a GitHub delivery signed with the wrong secret among them), logs in with the one-time link and
 * takes a screenshot of the page in headless Chromium (Debian's, driven by playwright-core).
 *
 *   npm run docs:screenshot            # needs /usr/bin/chromium (or $CHROMIUM_PATH) and the build
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'hooks-ingress');
const TOKEN = 'screenshot-token-0123456789abcdef';

async function run(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  await once(child, 'close');
  return out;
}

async function post(url: string, path: string, headers: Record<string, string>, body: string): Promise<void> {
  await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

const dir = await mkdtemp(join(tmpdir(), 'hooks-ingress-screenshot-'));
const config = join(dir, 'config.json');
const state = join(dir, 'state');
await writeFile(
  config,
  JSON.stringify({
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [
        { match: { path: 'github' }, signature: { scheme: 'github', secret: 'the-secret-github-has' }, action: 'wake', textTemplate: 'push to {{repository.full_name}}' },
        { match: { path: 'alerts' }, action: 'wake', textTemplate: 'alert: {{title}}' },
      ],
    },
    inspector: { port: 0 },
  }),
  { mode: 0o600 },
);
const server = spawn(process.execPath, [BIN, 'serve', '-c', config, '--port', '0', '--state-dir', state], { stdio: ['ignore', 'pipe', 'ignore'] });
try {
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d: Buffer) => {
      out += d;
      const match = /listening on (\S+)\n/.exec(out);
      if (match !== null) resolve(match[1]!);
    });
    server.once('close', () => reject(new Error('the server stopped before it listened')));
  });
  const auth = { authorization: `Bearer ${TOKEN}` };
  await post(url, '/hooks/alerts', auth, JSON.stringify({ title: 'disk 91% full on nas', host: 'nas', level: 'warning' }));
  await post(url, '/hooks/wake', auth, JSON.stringify({ text: 'Backup finished', mode: 'now' }));
  await post(url, '/hooks/wake', { authorization: 'Bearer not-the-token' }, '{}');
  await post(url, '/hooks/agent', auth, JSON.stringify({ message: 'Summarise the nightly CI failures', agentId: 'nobody' }));
  const push = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'me/notes' }, pusher: { name: 'me' }, head_commit: { message: 'Fix the parser' } });
  const signature = `sha256=${createHmac('sha256', 'an-old-secret').update(push).digest('hex')}`;
  await post(url, '/hooks/github', { 'x-hub-signature-256': signature, 'x-github-event': 'push', 'x-github-delivery': '7f1c2e80-5a3b-11ef-8d4a-1f2e3d4c5b6a' }, push);
  const link = /^(http\S+)$/m.exec(await run(['inspect', '--state-dir', state]))?.[1];
  if (link === undefined) throw new Error('inspect printed no link');

  const browser = await chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 }, colorScheme: 'light' });
    await page.goto(link);
    await page.locator('#list li', { hasText: '/hooks/github' }).locator('button').click();
    await page.locator('#detail', { hasText: 'bad-signature' }).waitFor();
    await page.screenshot({ path: join(ROOT, 'docs', 'inspector.png') });
  } finally {
    await browser.close();
  }
  process.stdout.write('wrote docs/inspector.png\n');
} finally {
  server.kill('SIGTERM');
  await once(server, 'close');
  await rm(dir, { recursive: true, force: true });
}

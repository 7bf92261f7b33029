/**
 * Makes the inspector's pictures in docs/: starts a real server with the inspector on and a GitHub
 * secret that is not GitHub's, sends it a few deliveries (GitHub pushes, refused; a Stripe event
 * signed an hour ago, an alert, a wake without its text), fixes the secret and reloads, sends one
 * more push (accepted) and replays one refused push, logs in with the one-time link and takes
 * screenshots in headless Chromium (Debian's, driven by playwright-core): the list
 * (inspector-list.png), a refused delivery (inspector.png), an accepted one (inspector-accepted.png)
 * and the bulk replay dialog (inspector-bulk.png).
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
import { chromium, type Page } from 'playwright-core';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'hooks-ingress');
const TOKEN = 'screenshot-token-0123456789abcdef';
const GITHUB = 'the-secret-github-has';
const STRIPE = 'whsec_the_secret_stripe_has';

async function run(...args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  await once(child, 'close');
  return out;
}

async function post(url: string, path: string, headers: Record<string, string>, body: string): Promise<void> {
  await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

// A GitHub push as GitHub signs it, with `secret`.
async function push(url: string, secret: string, delivery: string, message: string): Promise<void> {
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    repository: { full_name: 'me/notes' },
    pusher: { name: 'me' },
    head_commit: { message },
  });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  await post(url, '/hooks/github', {
    'x-hub-signature-256': signature,
    'x-github-event': 'push',
    'x-github-delivery': delivery,
  }, body);
}

// A Stripe event signed `age` seconds ago, as Stripe signs it.
async function stripe(url: string, age: number): Promise<void> {
  const body = JSON.stringify({
    id: 'evt_1QkTr2Lz',
    type: 'invoice.payment_failed',
    data: { object: { customer_email: 'ana@example.com', amount_due: 1200 } },
  });
  const t = Math.floor(Date.now() / 1000) - age;
  const v1 = createHmac('sha256', STRIPE).update(`${t}.${body}`).digest('hex');
  await post(url, '/hooks/stripe', { 'stripe-signature': `t=${t},v1=${v1}` }, body);
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ROOT, 'docs', name) });
  process.stdout.write(`wrote docs/${name}\n`);
}

const dir = await mkdtemp(join(tmpdir(), 'hooks-ingress-screenshot-'));
const config = join(dir, 'config.json');
const state = join(dir, 'state');
const configWith = (github: string) =>
  JSON.stringify({
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [
        {
          match: { path: 'github' },
          signature: { scheme: 'github', secret: github },
          action: 'wake',
          textTemplate: 'push to {{repository.full_name}}: {{head_commit.message}}',
        },
        {
          match: { path: 'stripe' },
          signature: { scheme: 'stripe', secret: STRIPE },
          action: 'wake',
          textTemplate: 'Stripe {{type}} for {{data.object.customer_email}}',
        },
        { match: { path: 'alerts' }, action: 'wake', textTemplate: 'alert: {{title}}' },
      ],
    },
    inspector: { port: 0 },
  });
await writeFile(config, configWith('an-old-secret'), { mode: 0o600 });
const server = spawn(process.execPath, [BIN, 'serve', '-c', config, '--port', '0', '--state-dir', state], {
  stdio: ['ignore', 'pipe', 'ignore'],
});
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
  await push(url, GITHUB, '3a9e1c40-5a3b-11ef-8d4a-1f2e3d4c5b6a', 'Add the nightly export');
  await stripe(url, 3_600);
  await post(
    url,
    '/hooks/alerts',
    auth,
    JSON.stringify({ title: 'disk 91% full on nas', host: 'nas', level: 'warning' }),
  );
  await post(url, '/hooks/wake', auth, JSON.stringify({ mode: 'now' }));
  await post(url, '/hooks/wake', { authorization: 'Bearer not-the-token' }, '{}');
  await push(url, GITHUB, '7f1c2e80-5a3b-11ef-8d4a-1f2e3d4c5b6a', 'Fix the parser');
  // The secret fixed: a new push is accepted, and the first refused one is replayed.
  await writeFile(config, configWith(GITHUB), { mode: 0o600 });
  await run('reload', '-c', config, '--state-dir', state);
  await push(url, GITHUB, '5c2d7e10-5a3b-11ef-9c1b-0e2f3a4b5c6d', 'Tidy the README');
  const first = /^\S+\s+401\s+\S+\s+POST github\s+(\S+)/m.exec(await run('requests', '--failed', '--state-dir', state))
    ?.[1];
  if (first === undefined) throw new Error('requests --failed listed no refused push');
  await run('requests', 'replay', first, '--state-dir', state);
  const link = /^(http\S+)$/m.exec(await run('inspect', '--state-dir', state))?.[1];
  if (link === undefined) throw new Error('inspect printed no link');

  const browser = await chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 }, colorScheme: 'light' });
    await page.goto(link);
    await page.locator('#list li').nth(7).waitFor();
    await page.locator('#list li .o-resolved').first().waitFor();
    await shoot(page, 'inspector-list.png');
    await page.locator('#list li', { hasText: 'refused: bad signature' }).filter({ hasNotText: 'resolved' }).locator(
      'button',
    ).click();
    await page.locator('#detail', { hasText: 'bad-signature' }).waitFor();
    await shoot(page, 'inspector.png');
    await page.locator('#list li', { hasText: 'accepted' }).filter({ hasText: '/hooks/github' }).filter({
      hasNotText: 'replay',
    }).locator('button').click();
    await page.locator('#detail', { hasText: 'What it became' }).waitFor();
    await shoot(page, 'inspector-accepted.png');
    await page.locator('#bulk').click();
    await page.locator('#confirm-yes:not([disabled])').waitFor();
    await shoot(page, 'inspector-bulk.png');
  } finally {
    await browser.close();
  }
} finally {
  server.kill('SIGTERM');
  await once(server, 'close');
  await rm(dir, { recursive: true, force: true });
}

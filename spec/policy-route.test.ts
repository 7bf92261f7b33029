import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Channel } from '../lib/model/actions.ts';
import { checkRoute, resolveRoute, type Routes, routesOf } from '../lib/policy/route.ts';
import type { Route } from '../lib/model/records.ts';

// Channels that take digit-only recipients, so each rule is visible in the test.
function routes(entries: [Channel, string | undefined][]): Routes {
  return new Map(
    entries.map(([name, defaultTo]) => [
      name,
      {
        checkRecipient: (
          to: string,
        ) => (/^[0-9]+$/.test(to) ? null : `Invalid ${name} recipient: expected digits, got ${JSON.stringify(to)}`),
        ...(defaultTo === undefined ? {} : { defaultTo }),
      },
    ]),
  );
}

const LAST: Route = { channel: 'discord', to: '777' };

test('resolveRoute() sends `last` to the last route when there is one', () => {
  const resolved = resolveRoute(routes([['telegram', '1'], ['discord', '2']]), LAST, 'last', undefined);
  assert.equal(resolved.ok, true);
  assert.deepEqual(resolved.ok && resolved.route, { channel: 'discord', to: '777' });
});

test("resolveRoute() sends `last` with `to` to the last route's channel and that recipient", () => {
  const resolved = resolveRoute(routes([['telegram', '1'], ['discord', '2']]), LAST, 'last', '4242');
  assert.deepEqual(resolved.ok && resolved.route, { channel: 'discord', to: '4242' });
});

test('resolveRoute() with no last route and exactly one channel picks it and its defaultTo', () => {
  const resolved = resolveRoute(routes([['telegram', '555']]), null, 'last', undefined);
  assert.deepEqual(resolved.ok && resolved.route, { channel: 'telegram', to: '555' });
  // A `to` still wins over the default recipient.
  const withTo = resolveRoute(routes([['telegram', '555']]), null, 'last', '666');
  assert.deepEqual(withTo.ok && withTo.route, { channel: 'telegram', to: '666' });
});

test('resolveRoute() with no last route and several channels skips with the reason', () => {
  const resolved = resolveRoute(routes([['telegram', '1'], ['discord', '2']]), null, 'last', undefined);
  assert.deepEqual(resolved, {
    ok: false,
    skipped: true,
    reason: 'no last route yet and more than one channel is configured',
  });
  // A recipient alone cannot say which of them is meant.
  assert.equal(resolveRoute(routes([['telegram', '1'], ['discord', '2']]), null, 'last', '3').ok, false);
});

/** Each case: the channels, last route, channel and `to` of a run, and the refusal resolveRoute() answers. */
const refusals: {
  name: string;
  channels: Routes;
  last: Route | null;
  channel: Channel;
  to: string | undefined;
  skipped: boolean;
  reason: string;
}[] = [
  {
    name: 'with no last route and no channel at all skips with the reason',
    channels: new Map(),
    last: null,
    channel: 'last',
    to: undefined,
    skipped: true,
    reason: 'no channel is configured',
  },
  {
    name: 'fails an explicit channel that is not configured, naming its config key',
    channels: routes([['telegram', '1']]),
    last: null,
    channel: 'slack',
    to: '123',
    skipped: false,
    reason: 'channel slack is not configured (channels.slack)',
  },
  {
    name: 'fails a last route whose channel is no longer configured',
    channels: routes([['telegram', '1']]),
    last: LAST,
    channel: 'last',
    to: undefined,
    skipped: false,
    reason: 'channel discord is not configured (channels.discord)',
  },
  {
    name: "fails a malformed recipient with the adapter's reason",
    channels: routes([['telegram', '1']]),
    last: null,
    channel: 'telegram',
    to: 'alice',
    skipped: false,
    reason: 'Invalid telegram recipient: expected digits, got "alice"',
  },
];

for (const c of refusals) {
  test(`resolveRoute() ${c.name}`, () => {
    assert.deepEqual(resolveRoute(c.channels, c.last, c.channel, c.to), {
      ok: false,
      skipped: c.skipped,
      reason: c.reason,
    });
  });
}

test('resolveRoute() skips when neither the run nor the channel names a recipient', () => {
  assert.deepEqual(resolveRoute(routes([['telegram', undefined]]), null, 'telegram', undefined), {
    ok: false,
    skipped: true,
    reason: 'no recipient: the run names none and channels.telegram.defaultTo is not set',
  });
  assert.equal(resolveRoute(routes([['telegram', undefined]]), null, 'last', undefined).ok, false);
});

test("resolveRoute() for an explicit channel without `to` takes the last route's recipient on that channel, else defaultTo", () => {
  const both = routes([['telegram', '1'], ['discord', '2']]);
  const same = resolveRoute(both, LAST, 'discord', undefined);
  assert.deepEqual(same.ok && same.route, { channel: 'discord', to: '777' });
  const other = resolveRoute(both, LAST, 'telegram', undefined);
  assert.deepEqual(other.ok && other.route, { channel: 'telegram', to: '1' });
});

test('checkRoute() leaves `last` without `to` to delivery time', () => {
  assert.equal(checkRoute(new Map(), null, 'last', undefined), null);
  assert.equal(checkRoute(routes([['telegram', '1'], ['discord', '2']]), null, 'last', undefined), null);
});

test('checkRoute() refuses a named channel that is not configured, naming it', () => {
  assert.equal(
    checkRoute(routes([['telegram', '1']]), null, 'discord', undefined),
    'channel: discord is not configured (channels.discord)',
  );
  assert.equal(
    checkRoute(routes([['telegram', '1']]), null, 'discord', '123'),
    'channel: discord is not configured (channels.discord)',
  );
});

test('checkRoute() refuses a `to` malformed for the named channel, under the key `to`', () => {
  assert.equal(
    checkRoute(routes([['telegram', '1']]), null, 'telegram', 'alice'),
    'to: Invalid telegram recipient: expected digits, got "alice"',
  );
  assert.equal(checkRoute(routes([['telegram', '1']]), null, 'telegram', '42'), null);
  assert.equal(checkRoute(routes([['telegram', '1']]), null, 'telegram', undefined), null);
});

test("checkRoute() checks `last` with `to` against the last route's channel, or the only channel", () => {
  const both = routes([['telegram', '1'], ['discord', '2']]);
  assert.match(checkRoute(both, LAST, 'last', 'alice')!, /^to: Invalid discord recipient/);
  assert.equal(checkRoute(both, LAST, 'last', '99'), null);
  assert.match(checkRoute(routes([['telegram', '1']]), null, 'last', 'alice')!, /^to: Invalid telegram recipient/);
  // Which channel is meant is not known yet: delivery decides (and records why it skipped).
  assert.equal(checkRoute(both, null, 'last', 'alice'), null);
  // The last route's channel was removed from the config since.
  assert.equal(
    checkRoute(routes([['telegram', '1']]), LAST, 'last', '99'),
    'channel: discord is not configured (channels.discord)',
  );
});

test("routesOf() lists the configured channels with the platforms' recipient rules and their defaultTo", () => {
  const table = routesOf({ telegram: { defaultTo: '@news_channel' }, slack: {} });
  assert.deepEqual([...table.keys()], ['telegram', 'slack']);
  assert.equal(table.get('telegram')?.defaultTo, '@news_channel');
  assert.equal(table.get('telegram')?.checkRecipient('12345'), null);
  assert.match(table.get('slack')?.checkRecipient('general') ?? '', /^Invalid Slack recipient/);
});

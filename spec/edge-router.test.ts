import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Match, Router, splitTarget } from '../lib/edge/router.ts';

function hooksRouter(): Router<string> {
  return new Router<string>().add(['GET'], '/healthz', 'health').add(['POST'], '/hooks/*', 'hooks');
}

function found(match: Match<string> | null): { handler: string; rest: string } | null {
  return match === null ? null : { handler: match.route.handler, rest: match.rest };
}

test('router.find() matches an exact path with an empty rest', () => {
  const match = hooksRouter().find('/healthz');
  assert.deepEqual(found(match), { handler: 'health', rest: '' });
  assert.deepEqual(match?.route.methods, ['GET']);
});

/** Each case: the targets and what hooksRouter().find() answers for each (null: no match). */
const findCases: { name: string; targets: [target: string, found: { handler: string; rest: string } | null][] }[] = [
  {
    name: 'does not match an exact path with a trailing slash or a suffix',
    targets: [['/healthz/', null], ['/healthz/x', null], ['/healthzz', null]],
  },
  {
    name: 'matches a wildcard route below its base',
    targets: [['/hooks/wake', { handler: 'hooks', rest: 'wake' }], ['/hooks/github/push', {
      handler: 'hooks',
      rest: 'github/push',
    }]],
  },
  {
    name: 'matches a wildcard route at its base, with or without trailing slashes',
    targets: ['/hooks', '/hooks/', '/hooks///'].map((t) => [t, { handler: 'hooks', rest: '' }]),
  },
  {
    name: 'drops trailing slashes from the rest',
    targets: ['/hooks/wake/', '/hooks/wake//'].map((t) => [t, { handler: 'hooks', rest: 'wake' }]),
  },
  {
    name: 'does not match a path that merely starts with the base',
    targets: [['/hooksx', null], ['/hook', null], ['/', null], ['/other/hooks/wake', null]],
  },
  {
    name: 'percent-decodes the rest',
    targets: [
      ['/hooks/wa%6Be', { handler: 'hooks', rest: 'wake' }],
      ['/hooks/my%20hook', { handler: 'hooks', rest: 'my hook' }],
      ['/hooks/a%2Fb', { handler: 'hooks', rest: 'a/b' }],
      ['/hooks/caf%C3%A9', { handler: 'hooks', rest: 'café' }],
    ],
  },
  {
    name: 'returns null for a rest whose escapes do not decode',
    targets: [['/hooks/%', null], ['/hooks/%zz', null], ['/hooks/wake%E0%A4%A', null], ['/hooks/%C3', null]],
  },
];

for (const c of findCases) {
  test(`router.find() ${c.name}`, () => {
    const router = hooksRouter();
    for (const [target, expected] of c.targets) assert.deepEqual(found(router.find(target)), expected, target);
  });
}

test('router.find() matches the base literally, without decoding it', () => {
  assert.equal(hooksRouter().find('/ho%6Fks/wake'), null);
});

test('router.find() lets earlier routes win', () => {
  const router = new Router<string>().add(['POST'], '/hooks/wake', 'exact').add(['POST'], '/hooks/*', 'wildcard');
  assert.deepEqual(found(router.find('/hooks/wake')), { handler: 'exact', rest: '' });
  assert.deepEqual(found(router.find('/hooks/agent')), { handler: 'wildcard', rest: 'agent' });
  const reversed = new Router<string>().add(['POST'], '/hooks/*', 'wildcard').add(['POST'], '/hooks/wake', 'exact');
  assert.deepEqual(found(reversed.find('/hooks/wake')), { handler: 'wildcard', rest: 'wake' });
});

test('router.find() returns null when no route is added', () => {
  assert.equal(new Router<string>().find('/hooks'), null);
});

test('router.add() returns the router so routes chain', () => {
  const router = new Router<number>();
  assert.equal(router.add(['POST'], '/a', 1), router);
});

test('splitTarget() splits the path from the query', () => {
  const { pathname, query } = splitTarget('/hooks/wake?token=abc&x=1');
  assert.equal(pathname, '/hooks/wake');
  assert.equal(query.get('token'), 'abc');
  assert.equal(query.get('x'), '1');
});

test('splitTarget() returns an empty query when there is none', () => {
  const { pathname, query } = splitTarget('/hooks/wake');
  assert.equal(pathname, '/hooks/wake');
  assert.equal([...query].length, 0);
  assert.equal(query.has('token'), false);
  assert.equal(splitTarget('/hooks?').query.toString(), '');
});

test('splitTarget() keeps a path starting with // as a path, not a host', () => {
  const { pathname, query } = splitTarget('//evil.example/hooks/wake?token=t');
  assert.equal(pathname, '//evil.example/hooks/wake');
  assert.equal(query.get('token'), 't');
  assert.equal(splitTarget('//evil').pathname, '//evil');
});

test('splitTarget() answers "/" for an empty path', () => {
  assert.equal(splitTarget('').pathname, '/');
  assert.equal(splitTarget('?token=x').pathname, '/');
  assert.equal(splitTarget('?token=x').query.get('token'), 'x');
});

test('splitTarget() splits at the first question mark and leaves the path encoded', () => {
  const { pathname, query } = splitTarget('/hooks/a%20b?q=1?2&token');
  assert.equal(pathname, '/hooks/a%20b');
  assert.equal(query.get('q'), '1?2');
  assert.equal(query.has('token'), true);
});

test('splitTarget() does not parse an absolute-form target as a URL', () => {
  assert.equal(splitTarget('http://example.com/hooks/wake').pathname, 'http://example.com/hooks/wake');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  clientAddress,
  clientKey,
  formatIp,
  inAny,
  matchCidr,
  parseCidr,
  parseIp,
  requestClient,
} from '../lib/guard/address.ts';
import type { Cidr, Ip } from '../lib/guard/address.ts';
import { testTable } from './_cases.ts';

function ip(text: string): Ip {
  const parsed = parseIp(text);
  assert.ok(parsed, `expected ${text} to parse`);
  return parsed;
}

function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  assert.ok(parsed, `expected ${text} to parse`);
  return parsed;
}

function bytes(text: string): number[] {
  return [...ip(text).bytes];
}

// Canonical text of whatever parses, so expectations stay readable
function canon(text: string): string | null {
  const parsed = parseIp(text);
  return parsed && formatIp(parsed);
}

test('parseIp() reads an IPv4 dotted quad into four bytes', () => {
  assert.deepEqual(parseIp('192.168.0.1'), { family: 4, bytes: new Uint8Array([192, 168, 0, 1]) });
  assert.deepEqual(bytes('0.0.0.0'), [0, 0, 0, 0]);
  assert.deepEqual(bytes('255.255.255.255'), [255, 255, 255, 255]);
});

/** Text that is no IP address, by the rule it breaks. */
const NOT_IPS: Record<string, string[]> = {
  'parseIp() rejects IPv4 that is not four plain decimal parts 0-255': [
    '',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.4.',
    '.1.2.3.4',
    '1..2.3',
    '256.0.0.1',
    '1.2.3.999',
    '1.2.3.1000',
    '01.2.3.4',
    '1.2.3.00',
    '0x7f.0.0.1',
    '127.1',
    '2130706433',
    '+1.2.3.4',
    '-1.2.3.4',
    '1.2.3.4 ',
    ' 1.2.3.4',
    '1.2.3.4/32',
    '1.2.3.4:80',
    '[1.2.3.4]',
    '1.2.3.4%eth0',
    '１.2.3.4',
    'localhost',
    'unknown',
  ],
  'parseIp() rejects malformed IPv6': [
    ':',
    ':::',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7:8::',
    '::1:2:3:4:5:6:7:8',
    '1::2::3',
    '1:::2',
    ':1::2',
    '1::2:',
    '1:2:3:4:5:6:7:',
    '12345::',
    '00000::1',
    'g::1',
    '::1.2.3',
    '::1.2.3.256',
    '::01.2.3.4',
    '::1.2.3.4:5',
    '1.2.3.4::',
    '1:2:3:4:5:6:7:1.2.3.4',
    '1:2:3:4:5:1.2.3.4',
    'fe80::1%',
    'fe80::1%eth 0',
    'fe80::1%eth0%1',
    '[::1',
    '::1]',
    '[]',
    '[::1]:8080',
    '::1/128',
    ' ::1',
  ],
};

testTable(NOT_IPS, (bad) => assert.equal(parseIp(bad), null, bad));

test('parseIp() reads a full IPv6 address into sixteen bytes', () => {
  assert.deepEqual(parseIp('2001:0db8:0000:0000:0000:ff00:0042:8329'), {
    family: 6,
    bytes: new Uint8Array([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0xff, 0x00, 0x00, 0x42, 0x83, 0x29]),
  });
});

test('parseIp() expands :: compression at the start, middle and end', () => {
  assert.deepEqual(bytes('::'), new Array(16).fill(0));
  assert.deepEqual(bytes('::1'), [...new Array(15).fill(0), 1]);
  assert.deepEqual(bytes('1::'), [0, 1, ...new Array(14).fill(0)]);
});

test('parseIp() accepts an embedded IPv4 tail as the last 32 bits', () => {
  assert.deepEqual(bytes('::1.2.3.4'), [...new Array(12).fill(0), 1, 2, 3, 4]);
});

/** Addresses as written and their canonical text, by the rule they show. */
const CANONICAL: Record<string, [written: string, canonical: string][]> = {
  'parseIp() expands :: compression in the middle and at the end': [
    ['2001:db8::ff00:42:8329', '2001:db8::ff00:42:8329'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'],
    ['1::8', '1::8'],
  ],
  'parseIp() accepts upper-case hex and short groups': [
    ['2001:DB8::A:bC', '2001:db8::a:bc'],
    ['0:0:0:0:0:0:0:1', '::1'],
  ],
  'parseIp() reads an embedded IPv4 tail as the last two groups': [
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
  ],
  'parseIp() drops a zone and unwraps brackets': [
    ['fe80::1%eth0', 'fe80::1'],
    ['fe80::1%25', 'fe80::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[fe80::1%en0]', 'fe80::1'],
  ],
  'formatIp() writes IPv6 per RFC 5952': [
    ['2001:0DB8:0000:0000:0000:0000:0002:0001', '2001:db8::2:1'],
    ['::', '::'],
    ['1:0:0:0:0:0:0:0', '1::'],
  ],
  'formatIp() compresses only the longest zero run, the first on a tie, never a single group': [
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['0:0:1:0:0:1:0:0', '::1:0:0:1:0:0'],
    ['1:0:1:0:1:0:1:0', '1:0:1:0:1:0:1:0'],
  ],
};

testTable(CANONICAL, ([written, canonical]) => assert.equal(canon(written), canonical, written));

test('parseIp() folds IPv4-mapped IPv6 to family 4', () => {
  assert.deepEqual(parseIp('::ffff:1.2.3.4'), { family: 4, bytes: new Uint8Array([1, 2, 3, 4]) });
  assert.deepEqual(parseIp('::FFFF:7f00:1'), { family: 4, bytes: new Uint8Array([127, 0, 0, 1]) });
  assert.deepEqual(parseIp('0:0:0:0:0:ffff:10.0.0.1'), { family: 4, bytes: new Uint8Array([10, 0, 0, 1]) });
  assert.deepEqual(parseIp('[::ffff:10.0.0.1%eth0]'), { family: 4, bytes: new Uint8Array([10, 0, 0, 1]) });
});

test('parseIp() does not fold IPv4-compatible, NAT64 or near-mapped addresses', () => {
  for (const text of ['::1.2.3.4', '64:ff9b::1.2.3.4', '::fffe:1.2.3.4', '1::ffff:1.2.3.4', '::ffff:0:1.2.3.4']) {
    assert.equal(ip(text).family, 6, text);
  }
});

test('formatIp() writes IPv4 dotted', () => {
  assert.equal(formatIp({ family: 4, bytes: new Uint8Array([10, 0, 0, 1]) }), '10.0.0.1');
});

test('formatIp() writes an unfolded IPv4-mapped address with a dotted tail', () => {
  const mapped = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]);
  assert.equal(formatIp({ family: 6, bytes: mapped }), '::ffff:192.0.2.1');
});

test('parseCidr() reads address/prefix and treats a bare address as a host route', () => {
  assert.deepEqual(parseCidr('10.0.0.0/8'), { family: 4, bytes: new Uint8Array([10, 0, 0, 0]), prefix: 8 });
  const prefixes: [network: string, prefix: number][] = [
    ['10.1.2.3', 32],
    ['2001:db8::1', 128],
    ['0.0.0.0/0', 0],
    ['::/0', 0],
    ['[2001:db8::]/32', 32],
  ];
  for (const [network, prefix] of prefixes) assert.equal(cidr(network).prefix, prefix, network);
});

test('parseCidr() clears the host bits', () => {
  assert.deepEqual([...cidr('10.1.2.3/8').bytes], [10, 0, 0, 0]);
  assert.deepEqual([...cidr('192.168.255.255/20').bytes], [192, 168, 240, 0]);
  assert.equal(formatIp(cidr('2001:db8:abcd:1234::1/50')), '2001:db8:abcd::');
});

test('parseCidr() rejects prefixes out of range or not plain decimal', () => {
  for (
    const bad of [
      '10.0.0.0/33',
      '10.0.0.0/-1',
      '::/129',
      '10.0.0.0/',
      '10.0.0.0/08',
      '10.0.0.0/8/8',
      '10.0.0.0/ 8',
      '10.0.0.0/8 ',
      '10.0.0.0/x',
      '/8',
      '10.0.0/8',
      'example.com/8',
    ]
  ) {
    assert.equal(parseCidr(bad), null, bad);
  }
});

test('parseCidr() folds an IPv4-mapped network, counting its prefix from bit 96', () => {
  assert.deepEqual(parseCidr('::ffff:10.0.0.0/104'), { family: 4, bytes: new Uint8Array([10, 0, 0, 0]), prefix: 8 });
  assert.equal(cidr('::ffff:10.0.0.1').prefix, 32);
  assert.equal(cidr('::ffff:0.0.0.0/96').prefix, 0);
  assert.equal(parseCidr('::ffff:0.0.0.0/95'), null);
  assert.equal(parseCidr('::ffff:10.0.0.0/8'), null);
});

/** Addresses and the networks that hold them, and ones that do not, by the rule they show. */
const MATCHES: Record<
  string,
  { inside: [address: string, network: string][]; outside: [address: string, network: string][] }
> = {
  'matchCidr() matches IPv4 networks on whole and partial bytes': {
    inside: [
      ['10.255.1.2', '10.0.0.0/8'],
      ['172.31.255.255', '172.16.0.0/12'],
      ['1.2.3.4', '1.2.3.4'],
      ['1.2.3.5', '1.2.3.4/31'],
      ['203.0.113.9', '0.0.0.0/0'],
    ],
    outside: [
      ['11.0.0.0', '10.0.0.0/8'],
      ['172.32.0.0', '172.16.0.0/12'],
      ['172.15.255.255', '172.16.0.0/12'],
      ['1.2.3.5', '1.2.3.4'],
    ],
  },
  'matchCidr() matches IPv6 networks': {
    inside: [
      ['2001:db8:1::5', '2001:db8::/32'],
      ['fd12:3456::1', 'fc00::/7'],
      ['::1', '::1'],
      ['fe80::1%eth0', 'fe80::/10'],
      ['2001:db8::1', '::/0'],
    ],
    outside: [
      ['2001:db9::', '2001:db8::/32'],
      ['fe00::1', 'fc00::/7'],
      ['::2', '::1'],
    ],
  },
  'matchCidr() never matches across families, but mapped addresses match IPv4 networks': {
    inside: [
      ['::ffff:10.1.2.3', '10.0.0.0/8'],
      ['::ffff:a01:203', '10.0.0.0/8'],
      ['10.1.2.3', '::ffff:10.0.0.0/104'],
    ],
    outside: [
      ['::a01:203', '10.0.0.0/8'],
      ['10.1.2.3', '::/0'],
      ['::1', '0.0.0.0/0'],
    ],
  },
};

for (const [title, { inside, outside }] of Object.entries(MATCHES)) {
  test(title, () => {
    for (const [address, network] of inside) {
      assert.equal(matchCidr(ip(address), cidr(network)), true, `${address} in ${network}`);
    }
    for (const [address, network] of outside) {
      assert.equal(matchCidr(ip(address), cidr(network)), false, `${address} not in ${network}`);
    }
  });
}

test('matchCidr() ignores host bits of a hand-built network', () => {
  const loose: Cidr = { family: 4, bytes: new Uint8Array([10, 9, 9, 9]), prefix: 8 };
  assert.equal(matchCidr(ip('10.0.0.1'), loose), true);
});

test('inAny() is true when any network contains the address and false for none', () => {
  const nets = [cidr('10.0.0.0/8'), cidr('2001:db8::/32')];
  assert.equal(inAny(ip('10.0.0.1'), nets), true);
  assert.equal(inAny(ip('2001:db8::1'), nets), true);
  assert.equal(inAny(ip('192.0.2.1'), nets), false);
  assert.equal(inAny(ip('10.0.0.1'), []), false);
});

const proxies = [cidr('10.0.0.0/8'), cidr('127.0.0.1'), cidr('fd00::/8')];

/** The peer, its X-Forwarded-For, and the client address, by the rule they show; a fourth element replaces the trusted proxies. */
const CLIENTS: Record<
  string,
  [peer: string | undefined, forwarded: string | string[] | undefined, client: string, trusted?: Cidr[]][]
> = {
  'clientAddress() answers "unknown" for an absent or unparseable peer': [
    [undefined, '203.0.113.7', 'unknown'],
    ['', '203.0.113.7', 'unknown'],
    ['not-an-ip', undefined, 'unknown'],
  ],
  'clientAddress() answers the canonical peer when there is no X-Forwarded-For': [
    ['203.0.113.7', undefined, '203.0.113.7'],
    ['::ffff:203.0.113.7', undefined, '203.0.113.7'],
    ['2001:DB8:0:0::1', undefined, '2001:db8::1'],
    ['10.0.0.1', undefined, '10.0.0.1'],
  ],
  'clientAddress() ignores X-Forwarded-For from an untrusted peer': [
    ['203.0.113.7', '198.51.100.1', '203.0.113.7'],
    ['203.0.113.7', '198.51.100.1', '203.0.113.7', []],
    ['10.0.0.1', '198.51.100.1', '10.0.0.1', []],
  ],
  'clientAddress() takes the first untrusted hop from the right behind a trusted peer': [
    ['10.0.0.1', '198.51.100.1', '198.51.100.1'],
    ['10.0.0.1', '1.1.1.1, 198.51.100.1', '198.51.100.1'],
    ['::ffff:127.0.0.1', '2001:db8::7', '2001:db8::7'],
  ],
  'clientAddress() cannot be spoofed by hops the client wrote itself': [
    // The client sent "10.0.0.99, 127.0.0.1"; the proxy appended the real client 198.51.100.1
    ['10.0.0.1', '10.0.0.99, 127.0.0.1, 198.51.100.1', '198.51.100.1'],
  ],
  'clientAddress() walks past a chain of trusted proxies': [
    ['10.0.0.1', '198.51.100.1, 10.0.0.2, 10.0.0.3', '198.51.100.1'],
    ['127.0.0.1', '203.0.113.1,198.51.100.1,fd00::2,10.1.1.1', '198.51.100.1'],
  ],
  'clientAddress() answers the leftmost hop when every hop is trusted': [
    ['10.0.0.1', '10.0.0.9, 10.0.0.8', '10.0.0.9'],
    ['10.0.0.1', '127.0.0.1', '127.0.0.1'],
  ],
};

testTable(
  CLIENTS,
  ([peer, forwarded, client, trusted = proxies]) =>
    assert.equal(clientAddress(peer, forwarded, trusted), client, `${peer} / ${JSON.stringify(forwarded)}`),
);

/** X-Forwarded-For behind the trusted proxy 10.0.0.1, and the client address, by the rule they show. */
const FORWARDED: Record<string, [forwarded: string | string[], client: string][]> = {
  'clientAddress() stops at an entry that is not an IP and keeps the last hop read': [
    ['198.51.100.1, garbage, 10.0.0.2', '10.0.0.2'],
    ['198.51.100.1, 10.0.0.3, 1.2.3.4:80, 10.0.0.2', '10.0.0.2'],
    ['198.51.100.1, unknown', '10.0.0.1'],
    ['garbage', '10.0.0.1'],
    ['garbage, 198.51.100.1', '198.51.100.1'],
  ],
  'clientAddress() trims spaces and tabs and skips empty entries': [
    ['  198.51.100.1  ,\t10.0.0.2\t', '198.51.100.1'],
    ['198.51.100.1,, ,10.0.0.2,', '198.51.100.1'],
    ['', '10.0.0.1'],
    [' , ', '10.0.0.1'],
  ],
  'clientAddress() joins several X-Forwarded-For lines in order': [
    [['198.51.100.1, 10.0.0.3', '10.0.0.2'], '198.51.100.1'],
    [['203.0.113.1', '198.51.100.1'], '198.51.100.1'],
    [[], '10.0.0.1'],
    [['', '198.51.100.1'], '198.51.100.1'],
  ],
  'clientAddress() canonicalises hops, folding mapped ones and dropping zones and brackets': [
    ['::ffff:198.51.100.1', '198.51.100.1'],
    ['[2001:DB8::0:1]', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['198.51.100.1, ::ffff:10.0.0.5', '198.51.100.1'],
  ],
};

testTable(
  FORWARDED,
  ([forwarded, client]) =>
    assert.equal(clientAddress('10.0.0.1', forwarded, proxies), client, JSON.stringify(forwarded)),
);

test('clientKey() gives every address in one /64 the same key and neighbouring /64s different keys', () => {
  const a = clientKey('2001:db8:1:2::1');
  assert.equal(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), a);
  assert.equal(clientKey('2001:db8:1:2:dead:beef::42'), a);
  assert.notEqual(clientKey('2001:db8:1:3::1'), a);
});

/** Client addresses and the key their failures are counted under, by the rule they show. */
const KEYS: Record<string, [address: string, key: string][]> = {
  'clientKey() keys IPv4 and IPv4-mapped clients by their dotted quad': [
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
  ],
  'clientKey() keys IPv6 clients by their canonical /64': [
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8::/64'],
    ['::1', '::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['[2001:db8:0:0:1::1]', '2001:db8::/64'],
  ],
  'clientKey() returns anything unparseable unchanged': [
    ['unknown', 'unknown'],
    ['', ''],
    ['1.2.3.4:80', '1.2.3.4:80'],
  ],
};

testTable(KEYS, ([address, key]) => assert.equal(clientKey(address), key, address));

test('clientKey() composes with clientAddress()', () => {
  assert.equal(clientKey(clientAddress('10.0.0.1', '2001:db8:1:2::99', proxies)), '2001:db8:1:2::/64');
  assert.equal(clientKey(clientAddress(undefined, undefined, proxies)), 'unknown');
});

test('requestClient() gives the address clientAddress() gives and the key clientKey() gives', () => {
  const trusted = [cidr('10.0.0.0/8'), cidr('fd00::/8')];
  const peers = [undefined, '10.0.0.1', '::ffff:10.0.0.2', '192.0.2.7', '2001:db8:1:2:3:4:5:6', 'fd00::1', 'not an ip'];
  const forwarded = [undefined, '198.51.100.9', '2001:db8:aaaa:bbbb::1, 10.0.0.3', 'garbage, 10.0.0.4', [
    '203.0.113.5',
    '10.9.9.9',
  ], ''];
  for (const peer of peers) {
    for (const xff of forwarded) {
      const address = clientAddress(peer, xff, trusted);
      const got = requestClient({ remoteAddress: peer }, xff, trusted);
      assert.deepEqual(got, { address, key: clientKey(address) }, `${peer} / ${JSON.stringify(xff)}`);
    }
  }
});

test("requestClient() parses a connection's peer address once for all its requests", () => {
  let reads = 0;
  const socket = {
    get remoteAddress() {
      reads++;
      return '2001:db8:1:2:3:4:5:6';
    },
  };
  const first = requestClient(socket, undefined, []);
  const after = reads;
  assert.ok(after > 0);
  const second = requestClient(socket, undefined, []);
  assert.equal(reads, after, 'the second request reuses the first parse');
  assert.equal(second, first);
  assert.deepEqual(second, { address: '2001:db8:1:2:3:4:5:6', key: '2001:db8:1:2::/64' });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientAddress, clientKey, formatIp, inAny, matchCidr, parseCidr, parseIp, requestClient } from '../lib/guard/address.ts';
import type { Cidr, Ip } from '../lib/guard/address.ts';

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

test('parseIp() rejects IPv4 that is not four plain decimal parts 0-255', () => {
  for (const bad of [
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
  ]) {
    assert.equal(parseIp(bad), null, bad);
  }
});

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
  assert.equal(canon('2001:db8::ff00:42:8329'), '2001:db8::ff00:42:8329');
  assert.equal(canon('1:2:3:4:5:6:7::'), '1:2:3:4:5:6:7:0');
  assert.equal(canon('::2:3:4:5:6:7:8'), '0:2:3:4:5:6:7:8');
  assert.equal(canon('1::8'), '1::8');
});

test('parseIp() accepts upper-case hex and short groups', () => {
  assert.equal(canon('2001:DB8::A:bC'), '2001:db8::a:bc');
  assert.equal(canon('0:0:0:0:0:0:0:1'), '::1');
});

test('parseIp() accepts an embedded IPv4 tail as the last 32 bits', () => {
  assert.deepEqual(bytes('::1.2.3.4'), [...new Array(12).fill(0), 1, 2, 3, 4]);
  assert.equal(canon('64:ff9b::192.0.2.33'), '64:ff9b::c000:221');
  assert.equal(canon('1:2:3:4:5:6:1.2.3.4'), '1:2:3:4:5:6:102:304');
});

test('parseIp() drops a zone and unwraps brackets', () => {
  assert.equal(canon('fe80::1%eth0'), 'fe80::1');
  assert.equal(canon('fe80::1%25'), 'fe80::1');
  assert.equal(canon('[2001:db8::1]'), '2001:db8::1');
  assert.equal(canon('[fe80::1%en0]'), 'fe80::1');
});

test('parseIp() rejects malformed IPv6', () => {
  for (const bad of [
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
  ]) {
    assert.equal(parseIp(bad), null, bad);
  }
});

test('parseIp() folds IPv4-mapped IPv6 to family 4', () => {
  assert.deepEqual(parseIp('::ffff:1.2.3.4'), { family: 4, bytes: new Uint8Array([1, 2, 3, 4]) });
  assert.deepEqual(parseIp('::FFFF:7f00:1'), { family: 4, bytes: new Uint8Array([127, 0, 0, 1]) });
  assert.deepEqual(parseIp('0:0:0:0:0:ffff:10.0.0.1'), { family: 4, bytes: new Uint8Array([10, 0, 0, 1]) });
  assert.deepEqual(parseIp('[::ffff:10.0.0.1%eth0]'), { family: 4, bytes: new Uint8Array([10, 0, 0, 1]) });
});

test('parseIp() does not fold IPv4-compatible, NAT64 or near-mapped addresses', () => {
  assert.equal(ip('::1.2.3.4').family, 6);
  assert.equal(ip('64:ff9b::1.2.3.4').family, 6);
  assert.equal(ip('::fffe:1.2.3.4').family, 6);
  assert.equal(ip('1::ffff:1.2.3.4').family, 6);
  assert.equal(ip('::ffff:0:1.2.3.4').family, 6);
});

test('formatIp() writes IPv4 dotted and IPv6 per RFC 5952', () => {
  assert.equal(formatIp({ family: 4, bytes: new Uint8Array([10, 0, 0, 1]) }), '10.0.0.1');
  assert.equal(canon('2001:0DB8:0000:0000:0000:0000:0002:0001'), '2001:db8::2:1');
  assert.equal(canon('::'), '::');
  assert.equal(canon('1:0:0:0:0:0:0:0'), '1::');
});

test('formatIp() compresses only the longest zero run, the first on a tie, never a single group', () => {
  assert.equal(canon('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1');
  assert.equal(canon('2001:0:0:1:0:0:0:1'), '2001:0:0:1::1');
  assert.equal(canon('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
  assert.equal(canon('0:0:1:0:0:1:0:0'), '::1:0:0:1:0:0');
  assert.equal(canon('1:0:1:0:1:0:1:0'), '1:0:1:0:1:0:1:0');
});

test('formatIp() writes an unfolded IPv4-mapped address with a dotted tail', () => {
  const mapped = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]);
  assert.equal(formatIp({ family: 6, bytes: mapped }), '::ffff:192.0.2.1');
});

test('parseCidr() reads address/prefix and treats a bare address as a host route', () => {
  assert.deepEqual(parseCidr('10.0.0.0/8'), { family: 4, bytes: new Uint8Array([10, 0, 0, 0]), prefix: 8 });
  assert.equal(cidr('10.1.2.3').prefix, 32);
  assert.equal(cidr('2001:db8::1').prefix, 128);
  assert.equal(cidr('0.0.0.0/0').prefix, 0);
  assert.equal(cidr('::/0').prefix, 0);
  assert.equal(cidr('[2001:db8::]/32').prefix, 32);
});

test('parseCidr() clears the host bits', () => {
  assert.deepEqual([...cidr('10.1.2.3/8').bytes], [10, 0, 0, 0]);
  assert.deepEqual([...cidr('192.168.255.255/20').bytes], [192, 168, 240, 0]);
  assert.equal(formatIp(cidr('2001:db8:abcd:1234::1/50')), '2001:db8:abcd::');
});

test('parseCidr() rejects prefixes out of range or not plain decimal', () => {
  for (const bad of [
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
  ]) {
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

test('matchCidr() matches IPv4 networks on whole and partial bytes', () => {
  assert.equal(matchCidr(ip('10.255.1.2'), cidr('10.0.0.0/8')), true);
  assert.equal(matchCidr(ip('11.0.0.0'), cidr('10.0.0.0/8')), false);
  assert.equal(matchCidr(ip('172.31.255.255'), cidr('172.16.0.0/12')), true);
  assert.equal(matchCidr(ip('172.32.0.0'), cidr('172.16.0.0/12')), false);
  assert.equal(matchCidr(ip('172.15.255.255'), cidr('172.16.0.0/12')), false);
  assert.equal(matchCidr(ip('1.2.3.4'), cidr('1.2.3.4')), true);
  assert.equal(matchCidr(ip('1.2.3.5'), cidr('1.2.3.4')), false);
  assert.equal(matchCidr(ip('1.2.3.5'), cidr('1.2.3.4/31')), true);
  assert.equal(matchCidr(ip('203.0.113.9'), cidr('0.0.0.0/0')), true);
});

test('matchCidr() matches IPv6 networks', () => {
  assert.equal(matchCidr(ip('2001:db8:1::5'), cidr('2001:db8::/32')), true);
  assert.equal(matchCidr(ip('2001:db9::'), cidr('2001:db8::/32')), false);
  assert.equal(matchCidr(ip('fd12:3456::1'), cidr('fc00::/7')), true);
  assert.equal(matchCidr(ip('fe00::1'), cidr('fc00::/7')), false);
  assert.equal(matchCidr(ip('::1'), cidr('::1')), true);
  assert.equal(matchCidr(ip('::2'), cidr('::1')), false);
  assert.equal(matchCidr(ip('fe80::1%eth0'), cidr('fe80::/10')), true);
  assert.equal(matchCidr(ip('2001:db8::1'), cidr('::/0')), true);
});

test('matchCidr() never matches across families, but mapped addresses match IPv4 networks', () => {
  assert.equal(matchCidr(ip('::ffff:10.1.2.3'), cidr('10.0.0.0/8')), true);
  assert.equal(matchCidr(ip('::ffff:a01:203'), cidr('10.0.0.0/8')), true);
  assert.equal(matchCidr(ip('10.1.2.3'), cidr('::ffff:10.0.0.0/104')), true);
  assert.equal(matchCidr(ip('::a01:203'), cidr('10.0.0.0/8')), false);
  assert.equal(matchCidr(ip('10.1.2.3'), cidr('::/0')), false);
  assert.equal(matchCidr(ip('::1'), cidr('0.0.0.0/0')), false);
});

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

test('clientAddress() answers "unknown" for an absent or unparseable peer', () => {
  assert.equal(clientAddress(undefined, '203.0.113.7', proxies), 'unknown');
  assert.equal(clientAddress('', '203.0.113.7', proxies), 'unknown');
  assert.equal(clientAddress('not-an-ip', undefined, proxies), 'unknown');
});

test('clientAddress() answers the canonical peer when there is no X-Forwarded-For', () => {
  assert.equal(clientAddress('203.0.113.7', undefined, proxies), '203.0.113.7');
  assert.equal(clientAddress('::ffff:203.0.113.7', undefined, proxies), '203.0.113.7');
  assert.equal(clientAddress('2001:DB8:0:0::1', undefined, proxies), '2001:db8::1');
  assert.equal(clientAddress('10.0.0.1', undefined, proxies), '10.0.0.1');
});

test('clientAddress() ignores X-Forwarded-For from an untrusted peer', () => {
  assert.equal(clientAddress('203.0.113.7', '198.51.100.1', proxies), '203.0.113.7');
  assert.equal(clientAddress('203.0.113.7', '198.51.100.1', []), '203.0.113.7');
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1', []), '10.0.0.1');
});

test('clientAddress() takes the first untrusted hop from the right behind a trusted peer', () => {
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1', proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', '1.1.1.1, 198.51.100.1', proxies), '198.51.100.1');
  assert.equal(clientAddress('::ffff:127.0.0.1', '2001:db8::7', proxies), '2001:db8::7');
});

test('clientAddress() cannot be spoofed by hops the client wrote itself', () => {
  // The client sent "10.0.0.99, 127.0.0.1"; the proxy appended the real client 198.51.100.1
  assert.equal(clientAddress('10.0.0.1', '10.0.0.99, 127.0.0.1, 198.51.100.1', proxies), '198.51.100.1');
});

test('clientAddress() walks past a chain of trusted proxies', () => {
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1, 10.0.0.2, 10.0.0.3', proxies), '198.51.100.1');
  assert.equal(clientAddress('127.0.0.1', '203.0.113.1,198.51.100.1,fd00::2,10.1.1.1', proxies), '198.51.100.1');
});

test('clientAddress() answers the leftmost hop when every hop is trusted', () => {
  assert.equal(clientAddress('10.0.0.1', '10.0.0.9, 10.0.0.8', proxies), '10.0.0.9');
  assert.equal(clientAddress('10.0.0.1', '127.0.0.1', proxies), '127.0.0.1');
});

test('clientAddress() stops at an entry that is not an IP and keeps the last hop read', () => {
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1, garbage, 10.0.0.2', proxies), '10.0.0.2');
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1, 10.0.0.3, 1.2.3.4:80, 10.0.0.2', proxies), '10.0.0.2');
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1, unknown', proxies), '10.0.0.1');
  assert.equal(clientAddress('10.0.0.1', 'garbage', proxies), '10.0.0.1');
  assert.equal(clientAddress('10.0.0.1', 'garbage, 198.51.100.1', proxies), '198.51.100.1');
});

test('clientAddress() trims spaces and tabs and skips empty entries', () => {
  assert.equal(clientAddress('10.0.0.1', '  198.51.100.1  ,\t10.0.0.2\t', proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1,, ,10.0.0.2,', proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', '', proxies), '10.0.0.1');
  assert.equal(clientAddress('10.0.0.1', ' , ', proxies), '10.0.0.1');
});

test('clientAddress() joins several X-Forwarded-For lines in order', () => {
  assert.equal(clientAddress('10.0.0.1', ['198.51.100.1, 10.0.0.3', '10.0.0.2'], proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', ['203.0.113.1', '198.51.100.1'], proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', [], proxies), '10.0.0.1');
  assert.equal(clientAddress('10.0.0.1', ['', '198.51.100.1'], proxies), '198.51.100.1');
});

test('clientAddress() canonicalises hops, folding mapped ones and dropping zones and brackets', () => {
  assert.equal(clientAddress('10.0.0.1', '::ffff:198.51.100.1', proxies), '198.51.100.1');
  assert.equal(clientAddress('10.0.0.1', '[2001:DB8::0:1]', proxies), '2001:db8::1');
  assert.equal(clientAddress('10.0.0.1', 'fe80::1%eth0', proxies), 'fe80::1');
  assert.equal(clientAddress('10.0.0.1', '198.51.100.1, ::ffff:10.0.0.5', proxies), '198.51.100.1');
});

test('clientKey() keys IPv4 and IPv4-mapped clients by their dotted quad', () => {
  assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
  assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(clientKey('::ffff:cb00:7107'), '203.0.113.7');
});

test('clientKey() keys IPv6 clients by their canonical /64', () => {
  assert.equal(clientKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:DB8:0001:0002:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8::1'), '2001:db8::/64');
  assert.equal(clientKey('::1'), '::/64');
  assert.equal(clientKey('fe80::1%eth0'), 'fe80::/64');
  assert.equal(clientKey('[2001:db8:0:0:1::1]'), '2001:db8::/64');
});

test('clientKey() gives every address in one /64 the same key and neighbouring /64s different keys', () => {
  const a = clientKey('2001:db8:1:2::1');
  assert.equal(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), a);
  assert.equal(clientKey('2001:db8:1:2:dead:beef::42'), a);
  assert.notEqual(clientKey('2001:db8:1:3::1'), a);
});

test('clientKey() returns anything unparseable unchanged', () => {
  assert.equal(clientKey('unknown'), 'unknown');
  assert.equal(clientKey(''), '');
  assert.equal(clientKey('1.2.3.4:80'), '1.2.3.4:80');
});

test('clientKey() composes with clientAddress()', () => {
  assert.equal(clientKey(clientAddress('10.0.0.1', '2001:db8:1:2::99', proxies)), '2001:db8:1:2::/64');
  assert.equal(clientKey(clientAddress(undefined, undefined, proxies)), 'unknown');
});

test('requestClient() gives the address clientAddress() gives and the key clientKey() gives', () => {
  const trusted = [cidr('10.0.0.0/8'), cidr('fd00::/8')];
  const peers = [undefined, '10.0.0.1', '::ffff:10.0.0.2', '192.0.2.7', '2001:db8:1:2:3:4:5:6', 'fd00::1', 'not an ip'];
  const forwarded = [undefined, '198.51.100.9', '2001:db8:aaaa:bbbb::1, 10.0.0.3', 'garbage, 10.0.0.4', ['203.0.113.5', '10.9.9.9'], ''];
  for (const peer of peers) {
    for (const xff of forwarded) {
      const address = clientAddress(peer, xff, trusted);
      const got = requestClient({ remoteAddress: peer }, xff, trusted);
      assert.deepEqual(got, { address, key: clientKey(address) }, `${peer} / ${JSON.stringify(xff)}`);
    }
  }
});

test('requestClient() parses a connection\'s peer address once for all its requests', () => {
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

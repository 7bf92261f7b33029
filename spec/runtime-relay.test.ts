import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { RELAY_LIMITS, relayLines } from '../lib/runtime/relay.ts';

test("relayLines() passes whole lines on, a chunk's lines in one call, and the last line at the end even without its newline", async () => {
  const stream = new PassThrough();
  const written: string[] = [];
  relayLines(stream, (text) => written.push(text));
  stream.write('one\ntw');
  stream.write(Buffer.from('o\nthree ü', 'utf8').subarray(0, 9));
  stream.write(Buffer.from('ü', 'utf8').subarray(1));
  stream.end();
  await once(stream, 'close');
  assert.deepEqual(written, ['one\n', 'two\n', 'three ü\n']);
});

test('relayLines() cuts a line past maxLineChars and drops the rest of it, holding nothing more', async () => {
  const stream = new PassThrough();
  const written: string[] = [];
  relayLines(stream, (text) => written.push(text), { ...RELAY_LIMITS, maxLineChars: 5 });
  stream.write('abcdefgh');
  stream.write('ijk\nok\n');
  stream.end();
  await once(stream, 'close');
  assert.deepEqual(written, ['abcde…\nok\n']);
});

test('relayLines() reads a child that writes without pause (yes) at most bytesPerSecond, so the child waits on its writes', async () => {
  for (const args of [['-c', 'exec yes'], ['-c', 'exec yes >&2']]) {
    const child = spawn('sh', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let relayed = 0;
    relayLines(
      args[1]!.includes('>&2') ? child.stderr : child.stdout,
      (text) => void (relayed += Buffer.byteLength(text)),
    );
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const seconds = (performance.now() - started) / 1000;
    child.kill('SIGKILL');
    await once(child, 'exit');
    // Per second begun, a second's worth and the one read (up to a pipe's 64 KiB) that crossed it;
    // unpaced, yes writes hundreds of MiB a second.
    const bound = (Math.ceil(seconds) + 1) * (RELAY_LIMITS.bytesPerSecond + 64 * 1024);
    assert.ok(relayed > 0 && relayed <= bound, `relayed ${relayed} bytes in ${seconds.toFixed(1)} s, bound ${bound}`);
  }
});

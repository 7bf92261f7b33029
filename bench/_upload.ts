// The 64 MiB upload: streamed to /hooks/wake while the server's RSS is sampled; it must be refused
// with 413 without the server holding the body.
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { LogTap } from './_log-tap.ts';
import { rssKiB } from './_proc.ts';

const MiB = 1024 * 1024;
export const UPLOAD_BYTES = 64 * MiB;
const UPLOAD_CHUNK = 64 * 1024;

export interface UploadResult {
  mode: 'chunked' | 'content-length';
  status: number | null;
  error: string | null;
  msToAnswer: number | null;
  bytesSentBeforeAnswer: number;
  connectionClosed: boolean;
  /** Statuses the server logged during the upload, and how long it took to answer 413 by its own clock. */
  serverLogged: Record<string, number>;
  serverMsTo413: number | null;
  rssBeforeMiB: number | null;
  rssPeakMiB: number | null;
  rssGrowthMiB: number | null;
  peakSource: string;
}

function* _uploadBody(total: number, chunked: boolean): Generator<Buffer> {
  // Valid JSON from end to end, so only the size can be the reason for a refusal.
  const head = Buffer.from('{"text":"');
  const tail = Buffer.from('"}');
  const frame = (
    data: Buffer,
  ) => (chunked ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data);
  // One framed filler chunk, reused: the client holds 64 KiB, never the whole body.
  const filler = frame(Buffer.alloc(UPLOAD_CHUNK, 'a'));
  let left = total - head.length - tail.length;
  yield frame(head);
  while (left > 0) {
    const n = Math.min(left, UPLOAD_CHUNK);
    yield n === UPLOAD_CHUNK ? filler : frame(Buffer.alloc(n, 'a'));
    left -= n;
  }
  yield frame(tail);
  if (chunked) yield Buffer.from('0\r\n\r\n');
}

type _Outcome = Pick<UploadResult, 'status' | 'error' | 'msToAnswer' | 'bytesSentBeforeAnswer' | 'connectionClosed'>;

// A raw socket rather than node:http's client: that one gives up on EPIPE/ECONNRESET while still
// sending and never reads the answer that had arrived. Like curl, this reads while it sends.
function _send64MiB(url: string, token: string, mode: UploadResult['mode']): Promise<_Outcome> {
  const { hostname, port } = new URL(url);
  const chunked = mode === 'chunked';
  const head =
    `POST /hooks/wake HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
    (chunked ? 'Transfer-Encoding: chunked\r\n\r\n' : `Content-Length: ${UPLOAD_BYTES}\r\n\r\n`);
  return new Promise((resolve) => {
    const started = performance.now();
    let sent = 0;
    let received = '';
    let answer: { status: number; ms: number; sent: number } | null = null;
    let error: string | null = null;
    let closed = false;
    let done = false;
    let wake: (() => void) | null = null;
    const socket = connect({ host: hostname, port: Number(port) });
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      wake?.();
      socket.destroy();
      resolve({
        status: answer?.status ?? null,
        msToAnswer: answer?.ms ?? null,
        bytesSentBeforeAnswer: answer?.sent ?? sent,
        error: answer === null ? (error ?? 'no answer') : null,
        connectionClosed: closed,
      });
    };
    const timer = setTimeout(() => {
      error ??= 'no answer within 30 s';
      finish();
    }, 30_000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (answer !== null) return;
      received = (received + chunk).slice(0, 4096);
      const match = /^HTTP\/1\.[01] (\d{3}) /.exec(received);
      if (match !== null) {
        answer = { status: Number(match[1]), ms: performance.now() - started, sent };
        // The server should now drop the connection (the rest of the body is not read): give it a second.
        setTimeout(finish, 1_000);
      } else if (received.length >= 4096) {
        error = 'answer is not HTTP';
        finish();
      }
    });
    socket.on('error', (cause: NodeJS.ErrnoException) => {
      error ??= `${cause.code ?? cause.message} before any answer`;
      wake?.();
    });
    socket.on('close', () => {
      closed = true;
      wake?.();
      // Data already received has been emitted by now; a little grace for the parser above.
      setTimeout(finish, answer === null ? 50 : 0);
    });
    socket.once('connect', () => {
      void (async () => {
        socket.write(head);
        for (const piece of _uploadBody(UPLOAD_BYTES, chunked)) {
          if (answer !== null || closed || done) return;
          sent += piece.length;
          const flowing = socket.write(piece);
          // Yield every chunk so an early answer is read before the next write can fail.
          await new Promise<void>((resume) => {
            wake = resume;
            if (flowing) setImmediate(resume);
            else socket.once('drain', resume);
          });
          wake = null;
        }
      })();
    });
  });
}

/** Streams 64 MiB to /hooks/wake and times the answer while sampling the server's RSS. */
export async function upload(
  url: string,
  token: string,
  pid: number,
  mode: UploadResult['mode'],
  tap: LogTap,
): Promise<UploadResult> {
  tap.take();
  const before = rssKiB(pid, 'VmRSS');
  let peak = before ?? 0;
  // Writing 5 to clear_refs resets the peak (VmHWM), so it then covers this upload only.
  let hwmReset = false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    hwmReset = true;
  } catch {
    // Not Linux or not allowed: the sampled peak has to do.
  }
  const sampler = setInterval(() => (peak = Math.max(peak, rssKiB(pid, 'VmRSS') ?? 0)), 2);
  const outcome = await _send64MiB(url, token, mode);
  // Give a late allocation a moment to show up in RSS, and the log line a moment to arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  clearInterval(sampler);
  peak = Math.max(peak, rssKiB(pid, 'VmRSS') ?? 0);
  let peakSource = 'VmRSS sampled every 2 ms';
  const hwm = hwmReset ? rssKiB(pid, 'VmHWM') : null;
  if (hwm !== null && hwm > peak) {
    peak = hwm;
    peakSource = 'VmHWM, reset before each upload';
  } else if (hwm !== null) {
    peakSource = 'VmRSS sampled every 2 ms; VmHWM, reset before each upload, agrees';
  }
  const mib = (kib: number | null) => (kib === null ? null : kib / 1024);
  const logged = tap.take();
  return {
    mode,
    ...outcome,
    serverLogged: logged,
    serverMsTo413: tap.lastDuration('413'),
    rssBeforeMiB: mib(before),
    rssPeakMiB: before === null ? null : mib(peak),
    rssGrowthMiB: before === null ? null : mib(Math.max(0, peak - before)),
    peakSource: before === null ? 'unavailable (no /proc)' : peakSource,
  };
}

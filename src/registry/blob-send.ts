import type { FileHandle } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { type SocketFileSendError, startSocketFileSend } from '../runtime/index.js';

/**
 * A blob body is read in pieces this big, into two buffers used for the whole response. What a
 * read stream piped into the response costs instead (measured, 100 MiB served 5 times over):
 * at its default 64 KiB pieces 3 s of server CPU per GiB, at 1 MiB pieces 1.3 s; and every piece
 * is a fresh buffer, so concurrent pulls of a 200 MiB image hand the collector gigabytes, which
 * it answers with full collections of the whole server's heap (a quarter of the server's busy
 * time during 5 concurrent pulls was the collector's). Larger pieces gained nothing measurable.
 */
const pieceBytes = 1024 * 1024;

/**
 * How long a sendfile(2) send waits for a client that takes no bytes at all before it gives up
 * and closes the connection. The send holds a thread meanwhile (see sendByKernel).
 */
const defaultIdleTimeoutMs = 5 * 60 * 1000;

/** Errors of a send that say the client is gone (or stalled past the timeout), not that berth failed. */
const clientGone = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN', 'ETIMEDOUT']);

export interface SendFileRangeOptions {
  /** false: always the JS path (read into the process, write out), as over TLS. */
  readonly sendfile?: boolean;
  readonly idleTimeoutMs?: number;
}

/**
 * Sends bytes `start`..`end` (inclusive) of `file` as the body of `res` (its status and headers
 * already set). Over a plain TCP socket the kernel sends them (sendByKernel); over TLS, or when
 * the native addon is missing or busy, they are read and written here (sendByReading). A client
 * that goes away ends it quietly; a file that ends early (it never should: blobs are immutable)
 * rejects, and the caller destroys `res`.
 */
export async function sendFileRange(
  res: ServerResponse,
  file: FileHandle,
  start: number,
  end: number,
  options: SendFileRangeOptions = {},
): Promise<void> {
  if (options.sendfile !== false) {
    const done = await sendByKernel(res, file, start, end, options.idleTimeoutMs ?? defaultIdleTimeoutMs);
    if (done) return;
  }
  await sendByReading(res, file, start, end);
}

/** The fd of a plain (not TLS) TCP socket that node still has open. */
function plainSocketFd(socket: Socket | null): number | undefined {
  if (socket === null || socket instanceof TLSSocket || socket.destroyed) return undefined;
  const fd = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/**
 * The body by sendfile(2), kernel to kernel (what the reference registry does): each byte is
 * copied once, from the page cache to the socket, instead of into the process and out again.
 * The headers go first, and node's write queue for the socket (they, or the tail of a previous
 * response on a kept-alive connection) must have reached the kernel before any other bytes are
 * put on the socket; then the addon sends on a thread of its own over a dup of the socket's fd,
 * so node may close the socket meanwhile (the client gone) without the number going to another
 * file under it. The response then ends with no body of node's: the bytes behind its
 * Content-Length went past node. False when nothing was sent this way (no plain socket, the
 * addon missing or busy, or sendfile refusing the file): the caller sends by reading.
 */
async function sendByKernel(
  res: ServerResponse,
  file: FileHandle,
  start: number,
  end: number,
  idleTimeoutMs: number,
): Promise<boolean> {
  const socket = res.socket;
  if (plainSocketFd(socket) === undefined || socket === null) return false;
  res.flushHeaders();
  const flushed = await new Promise<boolean>((resolve) => {
    socket.write(Buffer.alloc(0), (err) => resolve(!err));
  });
  const fd = plainSocketFd(socket);
  if (!flushed || fd === undefined || res.destroyed) {
    res.destroy();
    return true;
  }
  const length = end - start + 1;
  const send = startSocketFileSend(fd, file.fd, start, length, idleTimeoutMs);
  if (send === undefined) return false;
  const cancel = () => send.cancel();
  res.once('close', cancel);
  let sent: number;
  try {
    sent = await send.sent;
  } catch (err) {
    const { code, sent: partly } = err as SocketFileSendError;
    if (code !== undefined && clientGone.has(code)) {
      res.destroy();
      return true;
    }
    // sendfile(2) not taking this file (EINVAL …) before any byte went: send it by reading.
    if (partly === 0) return false;
    throw err;
  } finally {
    res.off('close', cancel);
  }
  if (sent < length) throw new Error(`the blob file ended at byte ${start + sent}, before byte ${end}`);
  if (!res.destroyed) res.end();
  return true;
}

/**
 * The body read into the process and written out, taking back-pressure from the socket itself:
 * a buffer is read into again only once the socket has taken its previous piece.
 */
async function sendByReading(
  res: ServerResponse,
  file: FileHandle,
  start: number,
  end: number,
): Promise<void> {
  const gone = new Promise<'gone'>((resolve) => {
    if (res.destroyed) resolve('gone');
    else res.once('close', () => resolve('gone'));
  });
  const buffers = [Buffer.allocUnsafeSlow(pieceBytes), Buffer.allocUnsafeSlow(pieceBytes)] as const;
  // What each buffer's last write ended with: undefined when the socket took it, else its error.
  const taken: Promise<Error | null | undefined>[] = [Promise.resolve(undefined), Promise.resolve(undefined)];
  let turn: 0 | 1 = 0;
  for (let position = start; position <= end; turn = turn === 0 ? 1 : 0) {
    const previous = await Promise.race([taken[turn], gone]);
    if (previous === 'gone' || previous) return;
    const buffer = buffers[turn];
    const { bytesRead } = await file.read(buffer, 0, Math.min(pieceBytes, end - position + 1), position);
    if (bytesRead === 0) throw new Error(`the blob file ended at byte ${position}, before byte ${end}`);
    position += bytesRead;
    taken[turn] = new Promise((resolve) => res.write(buffer.subarray(0, bytesRead), resolve));
  }
  const last = await Promise.race([Promise.all(taken), gone]);
  if (last !== 'gone') res.end();
}

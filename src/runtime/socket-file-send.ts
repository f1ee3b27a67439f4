import { builtNativeAddon } from './native-addon.js';

/** A sendfile(2) of part of a file to a socket, under way on a thread of the native addon. */
export interface SocketFileSend {
  /**
   * The bytes sent once it has ended: all of them, or fewer when the file ended first. Rejects
   * with the errno error that stopped it (`code` EPIPE, ECONNRESET, ETIMEDOUT …); `sent` on that
   * error says how many bytes had gone.
   */
  readonly sent: Promise<number>;
  /** Ends it early: the socket is shut down both ways, `sent` rejects with EPIPE. */
  cancel(): void;
}

export type SocketFileSendError = NodeJS.ErrnoException & { sent: number };

/**
 * Starts sending `length` bytes of `fileFd` from `offset` to the connected socket `socketFd`
 * (kernel to kernel: no byte is copied through the process), waiting for room in the socket at
 * most `idleTimeoutMs` at a time. Both fds are dup'd for the send, so either may be closed while
 * it runs. Undefined when it cannot start here: the addon is not built, or too many sends are
 * under way; the caller then writes the bytes itself.
 */
export function startSocketFileSend(
  socketFd: number,
  fileFd: number,
  offset: number,
  length: number,
  idleTimeoutMs: number,
): SocketFileSend | undefined {
  const addon = builtNativeAddon();
  if (addon === undefined) return undefined;
  let settle: (err: NodeJS.ErrnoException | null, sent: number) => void = () => {};
  const sent = new Promise<number>((resolve, reject) => {
    settle = (err, bytes) => (err ? reject(Object.assign(err, { sent: bytes })) : resolve(bytes));
  });
  const handle = addon.sendFile(socketFd, fileFd, offset, length, idleTimeoutMs, (err, bytes) =>
    settle(err, bytes),
  );
  if (handle === null) return undefined;
  // Once the send has ended the handle stays valid and cancelling it does nothing.
  return { sent, cancel: () => addon.sendFileCancel(handle) };
}

/**
 * The frames of an exec stream (`berth exec`), the same on both hops (CLI ↔ server ↔ rep): every
 * WebSocket message is binary, its first byte the channel and the rest the payload, as
 * Kubernetes' `channel.k8s.io` protocol frames its streams. One socket then carries stdin,
 * stdout, stderr, window sizes and the exit code in order, and the server relays messages
 * without reading them.
 */
export const execChannel = {
  /** client → cell: bytes for the command's stdin. */
  stdin: 0,
  /** cell → client: the command's stdout (with a TTY, stdout and stderr both). */
  stdout: 1,
  /** cell → client: the command's stderr. */
  stderr: 2,
  /** client → cell: `{"cols":N,"rows":N}`, the terminal's new size (TTY only). */
  resize: 3,
  /** cell → client, last: `{"exit_code":N}`. */
  exit: 4,
  /** client → cell: stdin is at its end (no payload). */
  stdinEnd: 5,
  /** cell → client, last: a berth error body `{code, message}` when the command could not run. */
  error: 6,
} as const;

export type ExecChannel = (typeof execChannel)[keyof typeof execChannel];

/** One frame: the channel byte, then the payload. */
export function execFrame(channel: ExecChannel, payload: Uint8Array | string = ''): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const frame = Buffer.allocUnsafe(body.length + 1);
  frame[0] = channel;
  frame.set(body, 1);
  return frame;
}

/** A frame's channel and payload; undefined for an empty message. */
export function parseExecFrame(data: Buffer): { channel: number; payload: Buffer } | undefined {
  if (data.length === 0) return undefined;
  return { channel: data[0] ?? -1, payload: data.subarray(1) };
}

/** A terminal size as the resize frame and the exec request carry it, bounded. */
export function checkTerminalSize(cols: unknown, rows: unknown): { cols: number; rows: number } | undefined {
  const ok = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0 && (n as number) <= 10_000;
  return ok(cols) && ok(rows) ? { cols, rows } : undefined;
}

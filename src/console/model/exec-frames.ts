/**
 * The browser's half of the exec stream's framing (core/exec-channels.ts is the server's, on
 * Node's Buffer): every WebSocket message is binary, a channel byte then the payload. The
 * numbers are the protocol's; a test holds them equal to the server's.
 */
export const execChannels = {
  stdin: 0,
  stdout: 1,
  stderr: 2,
  resize: 3,
  exit: 4,
  stdinEnd: 5,
  error: 6,
} as const;

const encoder = new TextEncoder();

export function encodeExecFrame(channel: number, payload: Uint8Array | string = ''): Uint8Array {
  const body = typeof payload === 'string' ? encoder.encode(payload) : payload;
  const frame = new Uint8Array(body.length + 1);
  frame[0] = channel;
  frame.set(body, 1);
  return frame;
}

export function resizeFrame(cols: number, rows: number): Uint8Array {
  return encodeExecFrame(execChannels.resize, JSON.stringify({ cols, rows }));
}

/** What a frame from the cell means to the terminal. */
export type ExecOutput =
  | { readonly kind: 'output'; readonly bytes: Uint8Array }
  | { readonly kind: 'exit'; readonly code: number }
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'ignored' };

function jsonOf(bytes: Uint8Array): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function decodeExecFrame(frame: Uint8Array): ExecOutput {
  if (frame.length === 0) return { kind: 'ignored' };
  const payload = frame.subarray(1);
  switch (frame[0]) {
    case execChannels.stdout:
    case execChannels.stderr:
      return { kind: 'output', bytes: payload };
    case execChannels.exit: {
      const code = jsonOf(payload).exit_code;
      return { kind: 'exit', code: typeof code === 'number' ? code : -1 };
    }
    case execChannels.error: {
      const message = jsonOf(payload).message;
      return { kind: 'error', message: typeof message === 'string' ? message : 'The exec failed' };
    }
    default:
      return { kind: 'ignored' };
  }
}

/** The WebSocket URL of a ticket's path, on the page's own origin (ws: or wss: as the page). */
export function execSocketUrl(pageUrl: string, path: string): string {
  const url = new URL(path, pageUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

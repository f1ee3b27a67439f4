import pg from 'pg';

/** Waits between reconnects of a lost listening connection (what was missed meanwhile is found by the pollers). */
const reconnectMs = [250, 1_000, 5_000];

/**
 * A LISTEN on one channel over a connection of its own (a pooled one would be handed to queries
 * and lose it). A lost connection is opened again, after a short wait, while the listener is
 * open; notifications sent meanwhile are lost, which is why every consumer of them keeps its
 * periodic pass as the safety net. Returns how to stop listening.
 */
export function listenOnChannel(
  url: string,
  channel: string,
  onPayload: (payload: string) => void,
): () => Promise<void> {
  let stopped = false;
  let client: pg.Client | undefined;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const connect = async (): Promise<void> => {
    if (stopped) return;
    const next = new pg.Client({ connectionString: url });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) onPayload(message.payload);
    });
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    try {
      await next.connect();
      // The channel name is a constant of ours, never user input: quoting it is enough.
      await next.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
      failures = 0;
      if (stopped) await next.end();
    } catch {
      // catch-all: a refused or dropped connection is retried below; the pollers cover the gap.
      lost(next);
    }
  };

  const lost = (which: pg.Client): void => {
    if (client !== which) return;
    client = undefined;
    which.end().catch(() => {}); // catch-all: the connection is already broken
    if (stopped) return;
    const wait = reconnectMs[Math.min(failures++, reconnectMs.length - 1)]!;
    timer = setTimeout(() => void connect(), wait);
    timer.unref();
  };

  void connect();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    const open = client;
    client = undefined;
    await open?.end().catch(() => {}); // catch-all: closing a connection that already broke
  };
}

/**
 * Waits until `settled` resolves or `ms` have passed, whichever comes first. `settled` must never
 * reject (the waits this serves are for an end, not a result). The timer is a normal one, cleared
 * as soon as the wait is over: it keeps the process up while it waits, which the thing awaited
 * (an unref'd child watch, a worker thread) may not.
 */
export async function settledWithin(settled: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

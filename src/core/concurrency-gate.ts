/**
 * At most `width` calls in flight; the rest wait in arrival order.
 * - The BBS client goes through one, so a rep handed a hundred instances at once sends its claims
 *   a few at a time over reused connections instead of opening a hundred: the scale harness
 *   (1,000 cells) showed an unbounded burst overflowing the server's listen backlog (connect
 *   timeouts, ECONNRESET), which failed the claims and left their instances stranded.
 * - A cell's executor starts its containers through one (see `ExecutorOptions.maxConcurrentStarts`).
 */
export class ConcurrencyGate {
  readonly #width: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(width: number) {
    if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be at least 1, got ${width}`);
    this.#width = width;
  }

  /** Calls in flight now (for tests and metrics). */
  get running(): number {
    return this.#running;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#width) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running++;
    try {
      return await call();
    } finally {
      // The slot passes straight to the next waiter, so a late arrival cannot overtake the queue.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

/**
 * The part of autocannon's API the benchmarks use (the package ships no types, and @types/autocannon
 * is not installed): one run's options and the numbers read from its result.
 */
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    headers?: Record<string, string>;
  }
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    non2xx: number;
    errors: number;
    '5xx': number;
  }
  /**
   * A run: awaited for its result; its `response` event carries each answer's latency in ms as a
   * float (the result's histogram keeps only whole milliseconds).
   */
  interface Instance extends PromiseLike<Result> {
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void,
    ): this;
  }
  function autocannon(options: Options): Instance;
  export default autocannon;
}

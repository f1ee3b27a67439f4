/**
 * The console's half of `GET /v1/logs` (chunked NDJSON, docs/logs-and-exec.md): an incremental
 * line splitter, the typed lines, and the bounded buffer the live-log panel draws. Pure: the
 * panel feeds it decoded text as it arrives, so a chunk may end anywhere, even inside a line.
 */

/** One line of the stream: a log line of an instance, or an error about one (its cell failing). */
export type LogEntry =
  | {
      readonly kind: 'line';
      readonly seq: number;
      readonly ts: string;
      readonly source: string;
      readonly text: string;
      /** `stderr` when the cell says so; the stream is unknown on older cells. */
      readonly stream: string | undefined;
    }
  | {
      readonly kind: 'error';
      readonly seq: number;
      readonly ts: string;
      readonly source: string;
      readonly text: string;
    };

/** Splits text fed in pieces into whole lines; the unterminated tail waits for the next piece. */
export class LineSplitter {
  #tail = '';

  feed(text: string): string[] {
    const joined = this.#tail + text;
    const lines = joined.split('\n');
    this.#tail = lines.pop() ?? '';
    return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).filter((l) => l !== '');
  }
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

/**
 * One NDJSON line as an entry; undefined for what the panel does not show (a cell's `live`
 * marker, a line that is not JSON). Never throws: a stream is read for as long as it lasts, and
 * one bad line must not end it.
 */
export function parseLogLine(raw: string, seq: number): LogEntry | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const record = parsed as Record<string, unknown>;
  const ts = stringField(record, 'ts') ?? '';
  const source = stringField(record, 'source') ?? '';
  const error = stringField(record, 'error');
  if (error !== undefined) return { kind: 'error', seq, ts, source, text: error };
  const line = stringField(record, 'line');
  if (line === undefined) return undefined;
  return { kind: 'line', seq, ts, source, text: line, stream: stringField(record, 'stream') };
}

/**
 * The last `limit` entries: a log that runs for hours must not grow the page without bound.
 * Entries are kept in arrival order, which the server already interleaves by time.
 */
export class LogBuffer {
  #entries: LogEntry[] = [];
  #seq = 0;
  #dropped = 0;
  readonly #splitter = new LineSplitter();

  constructor(readonly limit: number) {}

  /** Feeds decoded text; returns true when something was added. */
  feed(text: string): boolean {
    let added = false;
    for (const raw of this.#splitter.feed(text)) {
      const entry = parseLogLine(raw, this.#seq);
      if (!entry) continue;
      this.#seq += 1;
      this.#entries.push(entry);
      added = true;
    }
    const excess = this.#entries.length - this.limit;
    if (excess > 0) {
      this.#entries.splice(0, excess);
      this.#dropped += excess;
    }
    return added;
  }

  get entries(): readonly LogEntry[] {
    return this.#entries;
  }

  /** How many older entries were let go to keep to the limit. */
  get dropped(): number {
    return this.#dropped;
  }
}

/** The query of `GET /v1/logs` for one instance (or every instance of an app without an index). */
export function logsQuery(options: {
  readonly app: string;
  readonly index?: number;
  readonly tail: number;
  readonly follow: boolean;
}): string {
  const query = new URLSearchParams({ app: options.app, tail: String(options.tail) });
  if (options.index !== undefined) query.set('index', String(options.index));
  if (options.follow) query.set('follow', 'true');
  return `/v1/logs?${query}`;
}

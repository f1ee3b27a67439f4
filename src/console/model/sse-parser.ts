/** One Server-Sent Event: its `id`, `event` name and the joined `data` lines. */
export interface SseMessage {
  readonly id: string | null;
  readonly event: string;
  readonly data: string;
}

/**
 * An incremental parser of the `text/event-stream` format (WHATWG HTML §9.2). The console reads
 * the server's streams with fetch rather than EventSource because EventSource cannot send the
 * bearer token; this parser is the part of EventSource it needs. Chunks may split anywhere, even
 * inside a line or a CRLF.
 */
export class SseParser {
  #buffer = '';
  #id: string | null = null;
  #event = '';
  #data: string[] = [];
  #sawField = false;

  /** Feeds decoded text; returns every message completed by it. */
  feed(text: string): SseMessage[] {
    this.#buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      if (!match) break;
      // A lone CR at the very end may be the first half of a CRLF split across chunks.
      if (match[0] === '\r' && match.index === this.#buffer.length - 1) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      const message = this.#line(line);
      if (message) out.push(message);
    }
    return out;
  }

  #line(line: string): SseMessage | undefined {
    if (line === '') {
      if (!this.#sawField) return undefined;
      const message = { id: this.#id, event: this.#event || 'message', data: this.#data.join('\n') };
      this.#event = '';
      this.#data = [];
      this.#sawField = false;
      return message;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\u0000')) this.#id = value;
    else return undefined;
    this.#sawField = true;
    return undefined;
  }
}

/** The event blocks of a Server-Sent Events body (the text between blank lines), as they arrive. */
export async function* sseBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      yield buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
    }
  }
}

/** One Server-Sent Events block: its `id:`, `event:` and joined `data:` lines. */
export interface SseBlock {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

export function parseSseBlock(block: string): SseBlock {
  const id = /^id: (.*)$/m.exec(block)?.[1];
  const event = /^event: (.*)$/m.exec(block)?.[1];
  return {
    ...(id !== undefined ? { id } : {}),
    ...(event !== undefined ? { event } : {}),
    data: sseData(block),
  };
}

/** An SSE block's `data:` lines joined, as the spec joins them. */
export function sseData(block: string): string {
  return block
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6))
    .join('\n');
}

import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * Calls `onChunk` with each piece of a request body as it arrives ('data' events), pausing the
 * body while the promise `onChunk` returns (if any) is pending; resolves after the last piece is
 * handled. Cheaper than `for await` over the body: its async iterator reads in paused mode, where
 * each `read()` concatenates whatever piled up into a new buffer (a copy of every byte) and every
 * piece costs a promise and a microtask (measured on 400 MiB over loopback: 1.78 s of CPU with
 * `for await`, 1.45 s with events). A failure of `onChunk` or of the body rejects, after
 * destroying the body as `for await` does when its loop throws.
 */
export function forEachChunk(
  body: Readable,
  onChunk: (chunk: Buffer) => Promise<void> | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let pending: Promise<void> | undefined;
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      body.off('data', onData);
      body.destroy();
      reject(err);
    };
    function onData(chunk: Buffer): void {
      let step: Promise<void> | undefined;
      try {
        step = onChunk(chunk);
      } catch (err) {
        fail(err);
        return;
      }
      if (step === undefined) return;
      body.pause();
      pending = step.then(() => {
        pending = undefined;
        if (!failed) body.resume();
      }, fail);
    }
    body.on('data', onData);
    finished(body).then(async () => {
      // The last piece's work may still be running when the body ends.
      await pending;
      if (!failed) resolve();
    }, fail);
  });
}

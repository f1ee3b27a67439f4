import type { TransferProgress } from '../registry/index.js';
import { progressBar } from './action-progress.js';

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** One progress line of a push or pull: the bar, bytes of total, blobs done of blobs to move. */
export function transferLine(
  verb: string,
  done: number,
  total: number,
  blobsDone: number,
  blobs: number,
): string {
  return `${progressBar(done, total)} ${verb} ${mib(done)} of ${mib(total)}, ${blobsDone}/${blobs} blobs`;
}

/**
 * A progress bar on stderr, redrawn in place with `\r` at most ten times a second, for `berth
 * image push|pull` on a terminal; nothing at all when stderr is not a TTY (logs and pipes get only
 * the summary line). `finish` clears the line.
 */
export function ttyTransferProgress(
  stream: NodeJS.WritableStream,
  verb: string,
  now: () => number = Date.now,
): { readonly progress: TransferProgress; finish(): void } {
  if ((stream as { isTTY?: boolean }).isTTY !== true) return { progress: {}, finish: () => undefined };
  const sizes = new Map<string, number>();
  const sent = new Map<string, number>();
  let total = 0;
  let lastDraw = 0;
  let drawn = false;
  const draw = (force: boolean) => {
    if (!force && now() - lastDraw < 100) return;
    lastDraw = now();
    let done = 0;
    let blobsDone = 0;
    for (const [digest, bytes] of sent) {
      done += bytes;
      if (bytes >= (sizes.get(digest) ?? Number.POSITIVE_INFINITY)) blobsDone += 1;
    }
    stream.write(`\r${transferLine(verb, done, total, blobsDone, sizes.size)}\u001b[K`);
    drawn = true;
  };
  return {
    progress: {
      onBlobs: (blobs) => {
        for (const blob of blobs) sizes.set(blob.digest, blob.size);
        total = [...sizes.values()].reduce((a, b) => a + b, 0);
        draw(true);
      },
      onBytes: (digest, bytes) => {
        sent.set(digest, bytes);
        draw(bytes >= (sizes.get(digest) ?? Number.POSITIVE_INFINITY));
      },
    },
    finish: () => {
      if (drawn) stream.write('\r\u001b[K');
    },
  };
}

import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file so readers see either the old content or the new, never a torn one: write a
 * temp file beside it, then rename(2) over. `durable` also fsyncs before the rename, for records
 * that must survive a power loss (not needed for state a crash makes moot anyway).
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { durable?: boolean; mode?: number } = {},
): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w', options.mode ?? 0o644);
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    if (options.durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

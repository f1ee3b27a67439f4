import { closeSync, createReadStream } from 'node:fs';
import type tar from 'tar-stream';

/**
 * Writes one tar entry. A file's content streams from `fd` (which this closes), bounded to the
 * header's size, so a file that grows while it is packed cannot push the archive past its header;
 * entries without content (directories, links) take no `fd`. The rootfs archiver and the task
 * output collector both pack through it.
 */
export function addTarEntry(
  pack: tar.Pack,
  header: Partial<tar.Header> & { name: string },
  fd?: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error | null) => (err ? reject(err) : resolve());
    if (fd === undefined) {
      pack.entry(header, '', done);
      return;
    }
    const sink = pack.entry(header, done);
    const size = header.size ?? 0;
    if (size === 0) {
      closeSync(fd);
      sink.end(Buffer.alloc(0));
      return;
    }
    const stream = createReadStream('', { fd, start: 0, end: size - 1, autoClose: true });
    stream.on('error', reject);
    stream.pipe(sink);
  });
}

import { createHash } from 'node:crypto';
import { createWriteStream, openSync } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { addTarEntry } from '../tar-entry.js';
import { sha256Digest } from './digest.js';
import type { SourceFile } from './image-source.js';

/**
 * Packs a directory into an uncompressed layer tar (tar-stream), as `docker import` of a
 * directory would: regular files, directories, symlinks (targets verbatim), hardlinks (by inode),
 * with modes, owners and mtimes. Sockets, fifos and device nodes are left out: runc makes /dev.
 * Returns the tar as a staged file whose digest is the layer's diff_id.
 */
export async function packRootfs(dir: string, out: string): Promise<SourceFile> {
  const pack = tar.pack();
  const hash = createHash('sha256');
  let size = 0;
  const hasher = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  const writing = pipeline(pack, hasher, createWriteStream(out, { flags: 'wx', mode: 0o600 }));
  writing.catch(() => undefined);
  try {
    await packTree(pack, dir, '', new Map());
    pack.finalize();
  } catch (err) {
    pack.destroy(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
  await writing;
  return { path: out, size, digest: sha256Digest(hash.digest('hex')), staged: true };
}

async function packTree(
  pack: tar.Pack,
  root: string,
  rel: string,
  inodes: Map<string, string>,
): Promise<void> {
  const names = (await readdir(join(root, rel))).sort();
  for (const name of names) {
    const path = rel === '' ? name : `${rel}/${name}`;
    const abs = join(root, path);
    const st = await lstat(abs);
    const common = { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtime: st.mtime };
    if (st.isDirectory()) {
      await addTarEntry(pack, { ...common, name: `${path}/`, type: 'directory' });
      await packTree(pack, root, path, inodes);
    } else if (st.isSymbolicLink()) {
      await addTarEntry(pack, { ...common, name: path, type: 'symlink', linkname: await readlink(abs) });
    } else if (st.isFile()) {
      const inode = `${st.dev}:${st.ino}`;
      const first = st.nlink > 1 ? inodes.get(inode) : undefined;
      if (first !== undefined) {
        await addTarEntry(pack, { ...common, name: path, type: 'link', linkname: first });
      } else {
        if (st.nlink > 1) inodes.set(inode, path);
        await addTarEntry(pack, { ...common, name: path, type: 'file', size: st.size }, openSync(abs, 'r'));
      }
    }
  }
}

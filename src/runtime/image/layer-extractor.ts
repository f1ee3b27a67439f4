import { constants } from 'node:fs';
import {
  chmod,
  lchown,
  link,
  lstat,
  lutimes,
  mkdir,
  open,
  readdir,
  rm,
  symlink,
  utimes,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { errnoCode, InvalidArgumentError } from '../../core/index.js';
import {
  archivePathComponents,
  InRootResolver,
  NotADirectoryInRootError,
  SymlinkLoopInRootError,
} from './in-root-path.js';

const whiteoutPrefix = '.wh.';
const opaqueMarker = '.wh..wh..opq';

type TarHeader = tar.Header;
/** tar-stream's entry: a streamx Readable, async-iterable at run time though not in its types. */
type TarEntry = tar.Extract extends AsyncIterable<infer E> ? E : never;

export function entryChunks(entry: TarEntry): AsyncIterable<Buffer> {
  return entry as unknown as AsyncIterable<Buffer>;
}

/** A layer entry the store will not write, named so the user can find it in the archive. */
export class LayerEntryRefusedError extends InvalidArgumentError {
  constructor(layer: string, entry: string, reason: string) {
    super(`layer ${layer}: entry "${entry}" ${reason}`, { layer, entry });
  }
}

async function lstatOrUndefined(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

async function drain(entry: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of entry) {
    // discard: the entry carries no data berth keeps
  }
}

/**
 * Applies image layers, in order, onto one root directory: the flattened rootfs pods mount as
 * their overlay lower dir. Keeps what must survive between layers (the in-root resolver's cache).
 *
 * Semantics are the OCI image spec's "applying changesets" with docker's choices where the spec
 * is silent: whiteouts (`.wh.NAME`, opaque `.wh..wh..opq`, and overlayfs-style char 0/0 devices)
 * hide only what lower layers wrote; an existing path is replaced unless both are directories;
 * device nodes and fifos are skipped (runc provides /dev); modes incl. setuid, owners and mtimes
 * are kept. Extended attributes (file capabilities) are not: Node has no setxattr.
 */
export class LayerApplier {
  readonly #resolver: InRootResolver;
  readonly #chown: boolean;

  constructor(readonly root: string) {
    this.#resolver = new InRootResolver(root);
    // Owners can only be set as root; unprivileged test runs still get a usable tree.
    this.#chown = process.getuid?.() === 0;
  }

  /** Extracts one uncompressed layer tar stream; rejects on the first refused entry. */
  async apply(tarStream: Readable, layer: string): Promise<void> {
    const run = new LayerRun(this.root, this.#resolver, this.#chown, layer);
    const extract = tar.extract();
    const feeding = pipeline(tarStream, extract);
    // The loop below reports the first error; keep the pipeline's own from being unhandled.
    feeding.catch(() => undefined);
    for await (const entry of extract) {
      await run.entry(entry.header, entryChunks(entry));
    }
    await feeding;
    await run.finish();
  }
}

/** The state of applying one layer. */
class LayerRun {
  /** Paths this layer wrote, and their ancestors: whiteouts must not hide them. */
  readonly #touched = new Set<string>();
  readonly #dirTimes: { abs: string; depth: number; mtime: Date }[] = [];

  readonly #root: string;
  readonly #resolver: InRootResolver;
  readonly #chown: boolean;
  readonly #layer: string;

  constructor(root: string, resolver: InRootResolver, chown: boolean, layer: string) {
    this.#root = root;
    this.#resolver = resolver;
    this.#chown = chown;
    this.#layer = layer;
  }

  #refuse(entry: string, reason: string): LayerEntryRefusedError {
    return new LayerEntryRefusedError(this.#layer, entry, reason);
  }

  #markTouched(rel: readonly string[]): void {
    for (let i = 1; i <= rel.length; i++) this.#touched.add(rel.slice(0, i).join('/'));
  }

  async entry(header: TarHeader, body: AsyncIterable<Buffer>): Promise<void> {
    const name = header.name;
    const components = archivePathComponents(name);
    if (components === null) throw this.#refuse(name, 'climbs out of the image root with ".."');
    const base = components.at(-1);
    if (base?.startsWith(whiteoutPrefix)) {
      await drain(body);
      return this.#whiteout(name, components.slice(0, -1), base);
    }
    // Typed as the common types only, but tar-stream passes others (pax-global-header) through.
    const type: string = header.type ?? 'file';
    if (type === 'pax-global-header') return drain(body);
    if (base === undefined) {
      await drain(body);
      if (type !== 'directory') throw this.#refuse(name, `is a ${type} at the image root`);
      await this.#setOwnerAndMode(this.#root, header);
      this.#dirTimes.push({ abs: this.#root, depth: 0, mtime: header.mtime ?? new Date() });
      return;
    }
    const parent = await this.#resolveParent(name, components.slice(0, -1), true);
    if (parent === undefined) return;
    const rel = [...parent, base];
    const abs = join(this.#root, ...rel);
    switch (type) {
      case 'directory':
        await drain(body);
        return this.#directory(rel, abs, header);
      case 'file':
      case 'contiguous-file':
        await this.#replace(rel, abs);
        return this.#file(rel, abs, header, body);
      case 'symlink':
        await drain(body);
        await this.#replace(rel, abs);
        await symlink(header.linkname ?? '', abs);
        if (this.#chown) await lchown(abs, header.uid ?? 0, header.gid ?? 0);
        await lutimes(abs, header.mtime ?? new Date(), header.mtime ?? new Date());
        this.#markTouched(rel);
        return;
      case 'link':
        await drain(body);
        return this.#hardlink(name, rel, abs, header.linkname ?? '');
      case 'character-device':
        await drain(body);
        // overlayfs spells a whiteout as a 0/0 char device; some tools copy that into layers.
        if ((header.devmajor ?? 0) === 0 && (header.devminor ?? 0) === 0) return this.#hideLower(rel);
        return;
      case 'block-device':
      case 'fifo':
        return drain(body);
      default:
        await drain(body);
        throw this.#refuse(name, `has an unsupported tar entry type "${String(type)}"`);
    }
  }

  async #resolveParent(
    name: string,
    components: readonly string[],
    create: boolean,
  ): Promise<string[] | undefined> {
    try {
      return await this.#resolver.resolveDir(components, create, (rel) => this.#markTouched(rel));
    } catch (err) {
      if (err instanceof NotADirectoryInRootError || err instanceof SymlinkLoopInRootError) {
        throw this.#refuse(name, `cannot be written: ${err.message}`);
      }
      throw err;
    }
  }

  async #whiteout(name: string, parentComponents: readonly string[], base: string): Promise<void> {
    const parent = await this.#resolveParent(name, parentComponents, false);
    if (parent === undefined) return; // nothing below to hide
    if (base === opaqueMarker) {
      const dir = join(this.#root, ...parent);
      const children = await readdir(dir).catch((err: unknown) => {
        if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [] as string[];
        throw err;
      });
      for (const child of children) await this.#hideLower([...parent, child]);
      return;
    }
    // `.wh..wh.*` other than the opaque marker is aufs bookkeeping (e.g. hardlink dirs): no meaning.
    if (base.startsWith(`${whiteoutPrefix}${whiteoutPrefix}`)) return;
    const hidden = base.slice(whiteoutPrefix.length);
    if (hidden === '' || hidden === '.' || hidden === '..') {
      throw this.#refuse(name, 'is a whiteout that names no file');
    }
    await this.#hideLower([...parent, hidden]);
  }

  /** Removes what lower layers put at `rel`, keeping anything this layer wrote there. */
  async #hideLower(rel: readonly string[]): Promise<void> {
    const abs = join(this.#root, ...rel);
    if (!this.#touched.has(rel.join('/'))) {
      await rm(abs, { recursive: true, force: true });
      this.#resolver.forget(rel);
      return;
    }
    const stat = await lstatOrUndefined(abs);
    if (!stat?.isDirectory()) return;
    for (const child of await readdir(abs)) await this.#hideLower([...rel, child]);
  }

  /** Clears the way for a new entry at `rel`; an existing directory survives only a directory. */
  async #replace(rel: readonly string[], abs: string, keepDirectory = false): Promise<boolean> {
    const existing = await lstatOrUndefined(abs);
    if (existing === undefined) return false;
    if (keepDirectory && existing.isDirectory()) return true;
    await rm(abs, { recursive: true, force: true });
    this.#resolver.forget(rel);
    return false;
  }

  async #directory(rel: readonly string[], abs: string, header: TarHeader): Promise<void> {
    const kept = await this.#replace(rel, abs, true);
    if (!kept) await mkdir(abs, { mode: 0o700 });
    this.#resolver.remember(rel);
    await this.#setOwnerAndMode(abs, header);
    this.#markTouched(rel);
    this.#dirTimes.push({ abs, depth: rel.length, mtime: header.mtime ?? new Date() });
  }

  async #file(
    rel: readonly string[],
    abs: string,
    header: TarHeader,
    body: AsyncIterable<Buffer>,
  ): Promise<void> {
    // O_EXCL|O_NOFOLLOW: the path was just cleared; never write through anything that appeared.
    const handle = await open(
      abs,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      for await (const chunk of body) await handle.write(chunk);
    } finally {
      await handle.close();
    }
    await this.#setOwnerAndMode(abs, header);
    const mtime = header.mtime ?? new Date();
    await utimes(abs, mtime, mtime);
    this.#markTouched(rel);
  }

  async #hardlink(name: string, rel: readonly string[], abs: string, linkname: string): Promise<void> {
    const targetComponents = archivePathComponents(linkname);
    if (targetComponents === null) {
      throw this.#refuse(name, `is a hardlink to "${linkname}", which climbs out of the image root`);
    }
    const targetBase = targetComponents.at(-1);
    if (targetBase === undefined) throw this.#refuse(name, 'is a hardlink to the image root');
    const targetParent = await this.#resolveParent(name, targetComponents.slice(0, -1), false);
    const missing = this.#refuse(name, `is a hardlink to "${linkname}", which is not in the image`);
    if (targetParent === undefined) throw missing;
    const targetAbs = join(this.#root, ...targetParent, targetBase);
    const target = await lstatOrUndefined(targetAbs);
    if (target === undefined) throw missing;
    if (target.isDirectory()) throw this.#refuse(name, `is a hardlink to the directory "${linkname}"`);
    if (targetAbs === abs) return;
    await this.#replace(rel, abs);
    // link(2) does not follow a symlink target: the link shares the symlink's own inode.
    await link(targetAbs, abs);
    this.#markTouched(rel);
  }

  async #setOwnerAndMode(abs: string, header: TarHeader): Promise<void> {
    // chown clears setuid/setgid, so the mode goes on after it.
    if (this.#chown) await lchown(abs, header.uid ?? 0, header.gid ?? 0);
    const fallback = header.type === 'directory' ? 0o755 : 0o644;
    await chmod(abs, (header.mode ?? fallback) & 0o7777);
  }

  /** Directory mtimes go on last, deepest first: writing children changes a directory's mtime. */
  async finish(): Promise<void> {
    this.#dirTimes.sort((a, b) => b.depth - a.depth);
    for (const { abs, mtime } of this.#dirTimes) {
      await utimes(abs, mtime, mtime).catch((err: unknown) => {
        // A later entry of the same layer may have replaced the directory.
        if (errnoCode(err) !== 'ENOENT') throw err;
      });
    }
  }
}

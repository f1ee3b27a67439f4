import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errnoCode, InvalidArgumentError } from '../../core/index.js';
import { isBlobDigest, parseBlobDigest } from './digest.js';
import { readRecord, recordBlobs } from './image-record.js';
import { readNames } from './names-index.js';
import { writeStoreFile } from './store-files.js';
import type { StoreLayout } from './store-layout.js';

/** A descriptor as the OCI image spec writes it (what the referrers API lists). */
export interface ManifestDescriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** What the registry knows of one manifest pushed into a repository (its `_manifests` link). */
export interface ManifestLink extends ManifestDescriptor {
  /** The digest of the manifest's `subject`, if it has one (for the referrers API). */
  readonly subject?: string;
}

const tagPattern = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/**
 * What clients pushed to the registry, per repository, as small files under
 * `images/repositories/<name>/` (the content itself is in `blobs/`, shared and deduplicated):
 *
 *   _manifests/<alg>/<hex>  a manifest pushed here: its descriptor (pushed media type, size,
 *                           artifactType, subject) as JSON
 *   _tags/<tag>             the digest the tag points at (re-tagging replaces it by rename)
 *   _blobs/<alg>/<hex>      a blob uploaded or mounted here (empty)
 *
 * Repository name components never start with `_`, so these cannot collide with a nested name.
 * Every file is written by rename, so readers take no lock. Images berth imported itself
 * (`berth image import`, pulls) are in the names index instead; `derived*` below present them as
 * repositories too, so the registry keeps serving what it served before pushes were stored apart.
 */
export class Repositories {
  readonly #layout: StoreLayout;

  constructor(layout: StoreLayout) {
    this.#layout = layout;
  }

  #repo(name: string): string {
    return join(this.#layout.repositories, name);
  }

  #digestPath(name: string, kind: '_manifests' | '_blobs', digest: string): string {
    const { algorithm, hex } = parseBlobDigest(digest);
    return join(this.#repo(name), kind, algorithm, hex);
  }

  #tagPath(name: string, tag: string): string {
    if (!tagPattern.test(tag)) throw new InvalidArgumentError(`invalid tag "${tag}"`, { tag });
    return join(this.#repo(name), '_tags', tag);
  }

  async #write(path: string, data: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true, mode: 0o755 });
    await writeStoreFile(this.#layout, path, data);
  }

  async linkBlob(name: string, digest: string): Promise<void> {
    const path = this.#digestPath(name, '_blobs', digest);
    if (existsSync(path)) return;
    await mkdir(dirname(path), { recursive: true, mode: 0o755 });
    await writeFile(path, '', { mode: 0o644 });
  }

  /** Whether the blob was uploaded or mounted here (and is still stored), or is part of an image named here. */
  hasBlob(name: string, digest: string): boolean {
    if (!existsSync(this.#layout.blob(digest))) return false;
    if (existsSync(this.#digestPath(name, '_blobs', digest))) return true;
    if (this.#linkedManifestNames(name).has(digest)) return true;
    return this.#derivedBlobs(name).has(digest);
  }

  /** Removes the blob's link here; false if it had none. The bytes stay until gc. */
  async unlinkBlob(name: string, digest: string): Promise<boolean> {
    const path = this.#digestPath(name, '_blobs', digest);
    if (!existsSync(path)) return false;
    await rm(path, { force: true });
    return true;
  }

  async putManifest(name: string, link: ManifestLink): Promise<void> {
    await this.#write(this.#digestPath(name, '_manifests', link.digest), `${JSON.stringify(link)}\n`);
  }

  async tag(name: string, tag: string, digest: string): Promise<void> {
    await this.#write(this.#tagPath(name, tag), digest);
  }

  /** The pushed manifest of this digest in this repository, else an imported image's. */
  manifest(name: string, digest: string): ManifestLink | undefined {
    const link = readJson<ManifestLink>(this.#digestPath(name, '_manifests', digest));
    if (link !== undefined && existsSync(this.#layout.blob(digest))) return link;
    return this.#derivedManifests(name).get(digest);
  }

  /** The digest a tag points at: the pushed tag, else the names index's image of `name:tag`. */
  tagTarget(name: string, tag: string): string | undefined {
    const pushed = this.pushedTag(name, tag);
    if (pushed !== undefined) return pushed;
    const id = readNames(this.#layout)[`${name}:${tag}`];
    return id === undefined ? undefined : readRecord(this.#layout, id)?.manifestDigest;
  }

  /** The digest of a tag pushed to the registry (not an imported name). */
  pushedTag(name: string, tag: string): string | undefined {
    if (!tagPattern.test(tag)) return undefined;
    try {
      const digest = readFileSync(this.#tagPath(name, tag), 'utf8').trim();
      return isBlobDigest(digest) ? digest : undefined;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return undefined;
      throw err;
    }
  }

  /** Tags of the repository (pushed and imported), or undefined if the repository is unknown. */
  tags(name: string): string[] | undefined {
    const known = this.#isRepository(name);
    const tags = new Set(listDir(join(this.#repo(name), '_tags')));
    for (const full of Object.keys(readNames(this.#layout))) {
      const colon = full.lastIndexOf(':');
      if (full.slice(0, colon) === name) tags.add(full.slice(colon + 1));
    }
    if (!known && tags.size === 0) return undefined;
    return [...tags].sort();
  }

  /** Every repository with a manifest or tag, pushed or imported. */
  names(): string[] {
    const found = new Set<string>();
    const walk = (dir: string, prefix: string): void => {
      for (const entry of listDir(dir)) {
        if (entry.startsWith('_')) continue;
        const name = prefix === '' ? entry : `${prefix}/${entry}`;
        if (this.#isRepository(name)) found.add(name);
        walk(join(dir, entry), name);
      }
    };
    walk(this.#layout.repositories, '');
    for (const full of Object.keys(readNames(this.#layout))) found.add(full.slice(0, full.lastIndexOf(':')));
    return [...found].sort();
  }

  #isRepository(name: string): boolean {
    return (
      listDir(join(this.#repo(name), '_tags')).length > 0 ||
      listDir(join(this.#repo(name), '_manifests')).length > 0
    );
  }

  /** The manifests pushed to this repository. */
  manifests(name: string): ManifestLink[] {
    const links: ManifestLink[] = [];
    for (const algorithm of listDir(join(this.#repo(name), '_manifests'))) {
      for (const hex of listDir(join(this.#repo(name), '_manifests', algorithm))) {
        const link = readJson<ManifestLink>(join(this.#repo(name), '_manifests', algorithm, hex));
        if (link !== undefined) links.push(link);
      }
    }
    return links;
  }

  #linkedManifestNames(name: string): Set<string> {
    return new Set(this.manifests(name).map((l) => l.digest));
  }

  /** The manifests of this repository whose subject is `digest` (the referrers API). */
  referrers(name: string, digest: string): ManifestLink[] {
    return this.manifests(name)
      .filter((l) => l.subject === digest && existsSync(this.#layout.blob(l.digest)))
      .sort((a, b) => a.digest.localeCompare(b.digest));
  }

  /** Removes a pushed manifest and every tag pointing at it; returns the tags removed, or undefined if it was not pushed here. */
  async deleteManifest(name: string, digest: string): Promise<string[] | undefined> {
    const path = this.#digestPath(name, '_manifests', digest);
    if (!existsSync(path)) return undefined;
    const tags = listDir(join(this.#repo(name), '_tags')).filter((t) => this.pushedTag(name, t) === digest);
    for (const tag of tags) await rm(this.#tagPath(name, tag), { force: true });
    await rm(path, { force: true });
    return tags;
  }

  /** Removes a pushed tag; false if there was none. */
  async deleteTag(name: string, tag: string): Promise<boolean> {
    if (this.pushedTag(name, tag) === undefined) return false;
    await rm(this.#tagPath(name, tag), { force: true });
    return true;
  }

  /**
   * Deletes blob links whose blob gc freed, so a later upload of the same bytes to another
   * repository does not make them readable here again.
   */
  async pruneBlobLinks(): Promise<void> {
    for (const name of this.#allRepositoryDirs()) {
      for (const algorithm of listDir(join(this.#repo(name), '_blobs'))) {
        for (const hex of listDir(join(this.#repo(name), '_blobs', algorithm))) {
          const digest = `${algorithm}:${hex}`;
          if (isBlobDigest(digest) && !existsSync(this.#layout.blob(digest))) {
            await rm(join(this.#repo(name), '_blobs', algorithm, hex), { force: true });
          }
        }
      }
    }
  }

  /** Every directory holding repository files (also those with only blob links). */
  #allRepositoryDirs(): string[] {
    const found: string[] = [];
    const walk = (dir: string, prefix: string): void => {
      for (const entry of listDir(dir)) {
        if (entry.startsWith('_')) {
          if (!found.includes(prefix)) found.push(prefix);
          continue;
        }
        walk(join(dir, entry), prefix === '' ? entry : `${prefix}/${entry}`);
      }
    };
    walk(this.#layout.repositories, '');
    return found.filter((name) => name !== '');
  }

  /** Manifest digests of every pushed manifest in every repository (gc roots). */
  allManifests(): ManifestLink[] {
    return this.names().flatMap((name) => this.manifests(name));
  }

  /** Manifests of images imported under a name in this repository, by manifest digest. */
  #derivedManifests(name: string): Map<string, ManifestLink> {
    const found = new Map<string, ManifestLink>();
    for (const id of this.#derivedIds(name)) {
      const record = readRecord(this.#layout, id);
      if (record === undefined) continue;
      const size = statSync(this.#layout.blob(record.manifestDigest), { throwIfNoEntry: false })?.size;
      if (size === undefined) continue;
      found.set(record.manifestDigest, {
        digest: record.manifestDigest,
        mediaType: record.manifestMediaType,
        size,
      });
    }
    return found;
  }

  #derivedBlobs(name: string): Set<string> {
    const blobs = new Set<string>();
    for (const id of this.#derivedIds(name)) {
      const record = readRecord(this.#layout, id);
      if (record !== undefined) for (const digest of recordBlobs(record)) blobs.add(digest);
    }
    return blobs;
  }

  #derivedIds(name: string): Set<string> {
    const names = readNames(this.#layout);
    return new Set(
      Object.keys(names)
        .filter((full) => full.slice(0, full.lastIndexOf(':')) === name)
        .map((full) => names[full] as string),
    );
  }
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Every blob a pushed manifest keeps alive, as `<alg>:<hex>` digests: the manifest itself, its
 * config and layers, or an index's children. A manifest blob gc cannot read keeps only itself.
 */
export function pushedBlobs(layout: StoreLayout, repositories: Repositories): Set<string> {
  const live = new Set<string>();
  for (const link of repositories.allManifests()) {
    live.add(link.digest);
    let doc: { config?: unknown; layers?: unknown; manifests?: unknown };
    try {
      doc = JSON.parse(readFileSync(layout.blob(link.digest), 'utf8')) as typeof doc;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || err instanceof SyntaxError) continue;
      throw err;
    }
    const descriptors = [doc.config, ...asArray(doc.layers), ...asArray(doc.manifests)];
    for (const d of descriptors) {
      const digest = (d as { digest?: unknown } | undefined)?.digest;
      if (typeof digest === 'string' && isBlobDigest(digest)) live.add(digest);
    }
  }
  return live;
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

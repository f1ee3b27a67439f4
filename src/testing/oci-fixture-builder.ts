import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/**
 * Builds image fixtures (layer tars, OCI layouts, docker-archives) for the image store's tests.
 * Lives beside the store rather than in src/testing because only these tests use it.
 */
export interface FixtureEntry {
  readonly name: string;
  readonly type?: tar.Header['type'];
  readonly body?: string | Buffer;
  readonly linkname?: string;
  readonly mode?: number;
  readonly uid?: number;
  readonly gid?: number;
  readonly mtime?: Date;
  readonly devmajor?: number;
  readonly devminor?: number;
}

export function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** A tar made with tar-stream from entries in order (file entries default to mode 0644). */
export async function tarBytes(entries: readonly FixtureEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of pack as unknown as AsyncIterable<Buffer>) chunks.push(chunk);
  })();
  for (const e of entries) {
    const { body, ...header } = e;
    await new Promise<void>((resolve, reject) =>
      pack.entry({ mtime: new Date(1_700_000_000_000), ...header }, body ?? '', (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

export interface LayoutOptions {
  readonly layers: readonly Buffer[];
  readonly gzip?: boolean;
  readonly config?: Record<string, unknown>;
  readonly refName?: string;
  /** Replace the diff_ids the config lists (to test a mismatch). */
  readonly diffIds?: readonly string[];
  readonly layerMediaType?: string;
  /** Write these bytes as the layer blob, under the digest of the honest blob. */
  readonly tamperLayer?: (blob: Buffer) => Buffer;
  readonly platforms?: readonly string[];
  /** Use these bytes as the layer blobs, honestly digested (e.g. a truncated gzip). */
  readonly blobs?: readonly Buffer[];
}

export interface LayoutResult {
  readonly configDigest: string;
  readonly manifestDigest: string;
}

function writeBlob(dir: string, data: Buffer, as = sha256(data)): string {
  mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true });
  writeFileSync(join(dir, 'blobs', 'sha256', as.slice('sha256:'.length)), data);
  return as;
}

/** Writes an OCI image layout directory holding one image (or one per platform, via an index). */
export function writeOciLayout(dir: string, options: LayoutOptions): LayoutResult {
  const gzip = options.gzip ?? true;
  const diffIds = options.diffIds ?? options.layers.map((l) => sha256(l));
  const layerDescriptors = options.layers.map((layer, i) => {
    const blob = options.blobs?.[i] ?? (gzip ? gzipSync(layer) : layer);
    const digest = sha256(blob);
    writeBlob(dir, options.tamperLayer ? options.tamperLayer(blob) : blob, digest);
    return {
      mediaType:
        options.layerMediaType ??
        (gzip ? 'application/vnd.oci.image.layer.v1.tar+gzip' : 'application/vnd.oci.image.layer.v1.tar'),
      digest,
      size: blob.length,
    };
  });
  const platforms = options.platforms ?? ['linux/amd64'];
  const manifests = platforms.map((platform) => {
    const [os, architecture] = platform.split('/');
    const config = Buffer.from(
      JSON.stringify({
        architecture,
        os,
        config: { Cmd: ['/bin/sh'], Env: ['PATH=/bin'], ...options.config },
        rootfs: { type: 'layers', diff_ids: diffIds },
      }),
    );
    const configDigest = writeBlob(dir, config);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.image.config.v1+json',
          digest: configDigest,
          size: config.length,
        },
        layers: layerDescriptors,
      }),
    );
    return {
      configDigest,
      manifestDigest: writeBlob(dir, manifest),
      size: manifest.length,
      os,
      architecture,
    };
  });
  const annotations = options.refName ? { 'org.opencontainers.image.ref.name': options.refName } : undefined;
  const descriptors = manifests.map((m) => ({
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    digest: m.manifestDigest,
    size: m.size,
    ...(platforms.length > 1 ? { platform: { os: m.os, architecture: m.architecture } } : {}),
    ...(platforms.length === 1 && annotations ? { annotations } : {}),
  }));
  let top = descriptors;
  if (platforms.length > 1) {
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: descriptors,
      }),
    );
    top = [
      {
        mediaType: 'application/vnd.oci.image.index.v1+json',
        digest: writeBlob(dir, index),
        size: index.length,
        ...(annotations ? { annotations } : {}),
      },
    ];
  }
  writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: top }));
  const chosen = manifests.find((m) => m.architecture === 'amd64') ?? manifests[0];
  if (chosen === undefined) throw new Error('no platforms');
  return { configDigest: chosen.configDigest, manifestDigest: chosen.manifestDigest };
}

/** A docker-archive as `docker save` (classic) writes it; a repeated layer becomes a symlink. */
export async function dockerArchiveBytes(options: {
  readonly layers: readonly Buffer[];
  readonly repoTags?: readonly string[];
  readonly config?: Record<string, unknown>;
  readonly diffIds?: readonly string[];
}): Promise<{ bytes: Buffer; configDigest: string }> {
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Cmd: ['/bin/sh'], ...options.config },
      rootfs: { type: 'layers', diff_ids: options.diffIds ?? options.layers.map((l) => sha256(l)) },
    }),
  );
  const configDigest = sha256(config);
  const entries: FixtureEntry[] = [];
  const paths: string[] = [];
  const seen = new Map<string, string>();
  options.layers.forEach((layer, i) => {
    const id = sha256(Buffer.from(`v1-${i}`)).slice(7);
    const path = `${id}/layer.tar`;
    paths.push(path);
    entries.push({ name: `${id}/`, type: 'directory', mode: 0o755 });
    const first = seen.get(sha256(layer));
    if (first !== undefined) entries.push({ name: path, type: 'symlink', linkname: `../${first}` });
    else {
      seen.set(sha256(layer), path);
      entries.push({ name: path, body: layer });
    }
  });
  entries.push({ name: `${configDigest.slice(7)}.json`, body: config });
  entries.push({
    name: 'manifest.json',
    body: JSON.stringify([
      { Config: `${configDigest.slice(7)}.json`, RepoTags: options.repoTags ?? [], Layers: paths },
    ]),
  });
  return { bytes: await tarBytes(entries), configDigest };
}

/** Tars a directory's regular files (an OCI layout) into an archive, as an oci-archive. */
export async function tarDirectory(dir: string): Promise<Buffer> {
  const files = (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
  return tarBytes(files.map((name) => ({ name, body: readFileSync(join(dir, name)) })));
}

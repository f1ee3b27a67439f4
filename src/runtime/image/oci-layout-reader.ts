import { InvalidArgumentError } from '../../core/index.js';
import { digestHex } from './digest.js';
import type { ImagePlan, PlannedBlob } from './image-plan.js';
import { isImageName, normalizeImageName } from './image-reference.js';
import type { ImageSource } from './image-source.js';
import { checkLayerMediaType, configTypes, indexTypes, manifestTypes } from './media-types.js';
import { parseJson, readSourceBytes } from './source-json.js';

const refNameAnnotation = 'org.opencontainers.image.ref.name';
const maxIndexDepth = 4;

interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly platform?: { readonly os?: string; readonly architecture?: string; readonly variant?: string };
  readonly annotations?: Readonly<Record<string, string>>;
}

interface Candidate {
  readonly descriptor: Descriptor;
  readonly platform: string | undefined;
  readonly refName: string | undefined;
}

/** Go's GOARCH names, which OCI platforms use, for node's process.arch. */
export function hostArchitecture(): string {
  const map: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', ppc64: 'ppc64le' };
  return map[process.arch] ?? process.arch;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function descriptor(value: unknown, what: string): Descriptor {
  if (!isRecord(value) || typeof value.digest !== 'string' || typeof value.size !== 'number') {
    throw new InvalidArgumentError(`${what} is not a valid descriptor (digest and size are required)`);
  }
  digestHex(value.digest, `the digest of ${what}`);
  return {
    mediaType: typeof value.mediaType === 'string' ? value.mediaType : '',
    digest: value.digest,
    size: value.size,
    ...(isRecord(value.platform) ? { platform: value.platform as Descriptor['platform'] & object } : {}),
    ...(isRecord(value.annotations) ? { annotations: value.annotations as Record<string, string> } : {}),
  };
}

function blobPath(digest: string): string {
  return `blobs/sha256/${digestHex(digest)}`;
}

function platformOf(d: Descriptor): string | undefined {
  const p = d.platform;
  if (p?.os === undefined || p.architecture === undefined) return undefined;
  return `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`;
}

async function collect(
  source: ImageSource,
  manifests: unknown,
  what: string,
  depth: number,
  out: Candidate[],
  inherited?: string,
): Promise<void> {
  if (!Array.isArray(manifests)) throw new InvalidArgumentError(`${what} has no "manifests" array`);
  for (const [i, raw] of manifests.entries()) {
    const d = descriptor(raw, `${what} manifests[${i}]`);
    const refName = d.annotations?.[refNameAnnotation] ?? inherited;
    if (manifestTypes.has(d.mediaType)) {
      const platform = platformOf(d);
      // buildx stores provenance attestations as manifests for the "unknown/unknown" platform.
      if (platform?.startsWith('unknown/')) continue;
      out.push({ descriptor: d, platform, refName });
    } else if (indexTypes.has(d.mediaType)) {
      if (depth >= maxIndexDepth) throw new InvalidArgumentError(`${what} nests indexes too deeply`);
      const nestedWhat = `the index ${d.digest}`;
      const { bytes } = await readSourceBytes(source, blobPath(d.digest), nestedWhat, d);
      const nested = parseJson(bytes, nestedWhat);
      if (!isRecord(nested)) throw new InvalidArgumentError(`${nestedWhat} is not a JSON object`);
      await collect(source, nested.manifests, nestedWhat, depth + 1, out, refName);
    }
  }
}

function tagOf(name: string): string {
  return name.slice(name.lastIndexOf(':') + 1);
}

function choose(candidates: readonly Candidate[], wantedName: string | undefined, what: string): Candidate {
  let pool = candidates;
  if (wantedName !== undefined) {
    const byName = pool.filter((c) => c.refName === wantedName || c.refName === tagOf(wantedName));
    if (byName.length > 0) pool = byName;
  }
  if (pool.length === 1 && pool[0] !== undefined) return pool[0];
  const host = `linux/${hostArchitecture()}`;
  const forHost = pool.filter((c) => c.platform === host || c.platform?.startsWith(`${host}/`));
  if (forHost.length >= 1 && forHost[0] !== undefined && new Set(forHost.map((c) => c.refName)).size === 1) {
    return forHost[0];
  }
  const listed = pool.map((c) => `${c.refName ?? '(no name)'} ${c.platform ?? '(no platform)'}`).join(', ');
  if (pool.length === 0) throw new InvalidArgumentError(`${what} holds no image manifest`);
  throw new InvalidArgumentError(
    `${what} holds ${pool.length} images (${listed}) and none is the only one for ${host}; choose one with --name`,
  );
}

/**
 * Reads an OCI image layout (a directory, or an oci-archive unpacked) down to one image:
 * index.json → (nested indexes / manifest lists) → manifest → config and layers, verifying the
 * digest and size of every document against the descriptor that named it.
 */
export async function planOciLayout(source: ImageSource, wantedName?: string): Promise<ImagePlan> {
  if (source.has('oci-layout')) {
    const { bytes } = await readSourceBytes(source, 'oci-layout', 'the oci-layout file');
    const layout = parseJson(bytes, 'the oci-layout file');
    if (!isRecord(layout) || layout.imageLayoutVersion !== '1.0.0') {
      throw new InvalidArgumentError('the oci-layout file does not declare imageLayoutVersion 1.0.0');
    }
  }
  const { bytes: indexBytes } = await readSourceBytes(source, 'index.json', 'index.json');
  const index = parseJson(indexBytes, 'index.json');
  if (!isRecord(index)) throw new InvalidArgumentError('index.json is not a JSON object');
  const candidates: Candidate[] = [];
  await collect(source, index.manifests, 'index.json', 0, candidates);
  const chosen = choose(candidates, wantedName, 'index.json');

  const manifestWhat = `the manifest ${chosen.descriptor.digest}`;
  const { bytes } = await readSourceBytes(
    source,
    blobPath(chosen.descriptor.digest),
    manifestWhat,
    chosen.descriptor,
  );
  const manifest = parseJson(bytes, manifestWhat);
  if (!isRecord(manifest) || manifest.schemaVersion !== 2) {
    throw new InvalidArgumentError(`${manifestWhat} is not a schemaVersion 2 image manifest`);
  }
  const mediaType = typeof manifest.mediaType === 'string' ? manifest.mediaType : chosen.descriptor.mediaType;
  if (!manifestTypes.has(mediaType)) {
    throw new InvalidArgumentError(`${manifestWhat} has the unknown media type "${mediaType}"`);
  }
  const config = descriptor(manifest.config, `${manifestWhat} config`);
  if (!configTypes.has(config.mediaType)) {
    throw new InvalidArgumentError(
      `${manifestWhat} names a config of media type "${config.mediaType}", not an image config`,
    );
  }
  if (!Array.isArray(manifest.layers))
    throw new InvalidArgumentError(`${manifestWhat} has no "layers" array`);
  const layers: PlannedBlob[] = [];
  for (const [i, raw] of manifest.layers.entries()) {
    const d = descriptor(raw, `${manifestWhat} layers[${i}]`);
    const what = `layer ${i + 1} (${d.digest})`;
    checkLayerMediaType(d.mediaType, what);
    layers.push({ file: await source.file(blobPath(d.digest)), what, expected: d, mediaType: d.mediaType });
  }
  let names: string[] = [];
  if (wantedName !== undefined) names = [wantedName];
  else if (chosen.refName !== undefined && /[:/]/.test(chosen.refName) && isImageName(chosen.refName)) {
    // A full reference (containerd writes them); skopeo's bare tags name no repository.
    names = [normalizeImageName(chosen.refName)];
  }
  return {
    config: {
      file: await source.file(blobPath(config.digest)),
      what: `the image config (${config.digest})`,
      expected: config,
      mediaType: config.mediaType,
    },
    layers,
    manifest: { bytes, mediaType },
    names,
  };
}

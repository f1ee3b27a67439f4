/**
 * What a pushed manifest must be before the registry stores it: a JSON object of a manifest or
 * index media type, schemaVersion 2, with well-formed descriptors. Nothing here writes; the
 * handler stores the bytes only after every check passed, so a refused push leaves nothing.
 */
import { configTypes, indexTypes, isBlobDigest, manifestTypes } from '../runtime/image/index.js';
import { RegistryError } from './registry-errors.js';

export interface BlobDescriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly urls?: readonly string[];
  readonly platform?: { readonly os?: string; readonly architecture?: string; readonly variant?: string };
}

/** A checked manifest: what the registry must verify exists, and what it records of it. */
export interface CheckedManifest {
  readonly kind: 'image' | 'index';
  readonly mediaType: string;
  /** Image manifests: config then layers (each must be in the repository unless it has `urls`). */
  readonly blobs: readonly BlobDescriptor[];
  /** Indexes: the manifests listed (they may be pushed before or after the index). */
  readonly children: readonly BlobDescriptor[];
  readonly subject?: string;
  /** `artifactType`, else an image manifest's config media type when it is not an image config. */
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Whether berth can run it: an image manifest with an image config. */
  readonly runnable: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string, detail?: unknown): RegistryError {
  return new RegistryError('MANIFEST_INVALID', message, detail);
}

function descriptor(value: unknown, what: string): BlobDescriptor {
  if (!isRecord(value)) throw invalid(`${what} is not a descriptor object`);
  const { mediaType, digest, size, urls } = value;
  if (typeof mediaType !== 'string' || mediaType === '') throw invalid(`${what} has no mediaType`);
  if (typeof digest !== 'string') throw invalid(`${what} has no digest`);
  if (!isBlobDigest(digest)) {
    throw new RegistryError(
      'DIGEST_INVALID',
      `${what} has the digest "${digest}", not sha256:<64 hex> or sha512:<128 hex>`,
      { digest },
    );
  }
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw invalid(`${what} has no valid size`, { digest });
  }
  if (urls !== undefined && !(Array.isArray(urls) && urls.every((u) => typeof u === 'string'))) {
    throw invalid(`${what} has urls that are not a list of strings`, { digest });
  }
  return value as unknown as BlobDescriptor;
}

function parse(bytes: Buffer): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw invalid(`the manifest is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(doc)) throw invalid('the manifest is not a JSON object');
  return doc;
}

/**
 * The media type a manifest is stored and served with: its `mediaType` field, else the PUT's
 * Content-Type. Both present and different is refused: a client would be served a type the
 * document denies.
 */
function mediaTypeOf(doc: Record<string, unknown>, contentType: string): string {
  const field = typeof doc.mediaType === 'string' ? doc.mediaType : undefined;
  if (field !== undefined && contentType !== '' && field !== contentType) {
    throw invalid(`the manifest says mediaType "${field}" but was sent as "${contentType}"`, {
      mediaType: field,
      contentType,
    });
  }
  return field ?? contentType;
}

export function checkManifest(bytes: Buffer, contentType: string): CheckedManifest {
  const doc = parse(bytes);
  const mediaType = mediaTypeOf(doc, contentType);
  if (doc.schemaVersion !== 2) throw invalid('the manifest is not schemaVersion 2');
  const subject = doc.subject === undefined ? undefined : descriptor(doc.subject, 'subject').digest;
  const artifactType = typeof doc.artifactType === 'string' ? doc.artifactType : undefined;
  const annotations = isRecord(doc.annotations) ? (doc.annotations as Record<string, string>) : undefined;
  const common = {
    mediaType,
    ...(subject === undefined ? {} : { subject }),
    ...(annotations === undefined ? {} : { annotations }),
  };
  if (indexTypes.has(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw invalid('the index has no manifests list');
    const children = doc.manifests.map((d, i) => descriptor(d, `manifests[${i}]`));
    return {
      kind: 'index',
      blobs: [],
      children,
      runnable: false,
      ...common,
      ...(artifactType === undefined ? {} : { artifactType }),
    };
  }
  if (!manifestTypes.has(mediaType)) {
    throw invalid(`unsupported manifest media type "${mediaType}"`, { mediaType });
  }
  const config = descriptor(doc.config, 'config');
  if (doc.layers !== undefined && !Array.isArray(doc.layers)) throw invalid('layers is not a list');
  const layers = ((doc.layers as unknown[] | undefined) ?? []).map((d, i) => descriptor(d, `layers[${i}]`));
  const isImage = configTypes.has(config.mediaType);
  const type = artifactType ?? (isImage ? undefined : config.mediaType);
  return {
    kind: 'image',
    blobs: [config, ...layers],
    children: [],
    runnable: isImage && artifactType === undefined,
    ...common,
    ...(type === undefined ? {} : { artifactType: type }),
  };
}

/** Layers a registry need not hold: "non-distributable" ones the manifest says to fetch from `urls`. */
export function isForeign(d: BlobDescriptor): boolean {
  return d.urls !== undefined && d.urls.length > 0;
}

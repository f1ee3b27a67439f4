import { InvalidArgumentError } from '../../core/index.js';
import type { ImagePlan, PlannedBlob } from './image-plan.js';
import { isImageName, normalizeImageName } from './image-reference.js';
import type { ImageSource } from './image-source.js';
import { dockerConfig } from './media-types.js';
import { parseJson, readSourceBytes } from './source-json.js';

interface ArchiveEntry {
  readonly Config: string;
  readonly RepoTags: readonly string[];
  readonly Layers: readonly string[];
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function entries(json: unknown): ArchiveEntry[] {
  if (!Array.isArray(json) || json.length === 0) {
    throw new InvalidArgumentError('manifest.json is not a non-empty array of images');
  }
  return json.map((raw, i) => {
    const entry = raw as Record<string, unknown>;
    if (typeof entry?.Config !== 'string' || !isStringArray(entry.Layers)) {
      throw new InvalidArgumentError(`manifest.json entry ${i} has no Config file and Layers list`);
    }
    return {
      Config: entry.Config,
      Layers: entry.Layers,
      RepoTags: isStringArray(entry.RepoTags) ? entry.RepoTags : [],
    };
  });
}

/**
 * A file named by its content digest (`<hex>.json` configs of classic `docker save`,
 * `blobs/sha256/<hex>` of docker ≥ 25) must hash to that name: the archive's only digests.
 * Classic `<v1 id>/layer.tar` names carry no digest; those layers are checked by diff_id.
 */
function digestFromName(path: string): string | undefined {
  const match = /^(?:blobs\/sha256\/)?([a-f0-9]{64})(?:\.json)?$/.exec(path);
  return match?.[1] === undefined ? undefined : `sha256:${match[1]}`;
}

function tagsOf(entry: ArchiveEntry): string[] {
  return entry.RepoTags.filter((t) => isImageName(t)).map((t) => normalizeImageName(t));
}

/** Reads a docker-archive (`docker save`, `podman save`, skopeo's docker-archive:) to one image. */
export async function planDockerArchive(source: ImageSource, wantedName?: string): Promise<ImagePlan> {
  const { bytes } = await readSourceBytes(source, 'manifest.json', 'manifest.json');
  const all = entries(parseJson(bytes, 'manifest.json'));
  let entry = all.length === 1 ? all[0] : undefined;
  if (entry === undefined && wantedName !== undefined)
    entry = all.find((e) => tagsOf(e).includes(wantedName));
  if (entry === undefined) {
    const listed = all.map((e) => e.RepoTags.join(' ') || '(untagged)').join(', ');
    throw new InvalidArgumentError(
      `manifest.json holds ${all.length} images (${listed}); choose one with --name NAME:TAG`,
    );
  }
  const configDigest = digestFromName(entry.Config);
  const layers: PlannedBlob[] = [];
  for (const [i, path] of entry.Layers.entries()) {
    const digest = digestFromName(path);
    layers.push({
      file: await source.file(path),
      what: `layer ${i + 1} ("${path}")`,
      ...(digest === undefined ? {} : { expected: { digest } }),
    });
  }
  return {
    config: {
      file: await source.file(entry.Config),
      what: `the image config ("${entry.Config}")`,
      ...(configDigest === undefined ? {} : { expected: { digest: configDigest } }),
      mediaType: dockerConfig,
    },
    layers,
    names: wantedName === undefined ? tagsOf(entry) : [wantedName],
  };
}

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../../core/index.js';
import { DigestMismatchError } from './blob-store.js';
import { sha256Digest } from './digest.js';
import type { ImageSource } from './image-source.js';

/** Small JSON documents (index, manifests) are capped: a real one is kilobytes. */
const maxJsonBytes = 4 * 1024 * 1024;

/** Reads a file of the source, verifying its digest (and size) when a descriptor names them. */
export async function readSourceBytes(
  source: ImageSource,
  path: string,
  what: string,
  expected?: { readonly digest: string; readonly size?: number },
): Promise<{ bytes: Buffer; digest: string }> {
  const file = await source.file(path);
  if (file.size > maxJsonBytes) {
    throw new InvalidArgumentError(
      `${what} ("${path}") is ${file.size} bytes, too large for a JSON document`,
    );
  }
  const bytes = await readFile(file.path);
  const digest = sha256Digest(createHash('sha256').update(bytes).digest('hex'));
  if (expected !== undefined) {
    if (digest !== expected.digest) throw new DigestMismatchError(what, expected.digest, digest);
    if (expected.size !== undefined && expected.size !== bytes.length) {
      throw new InvalidArgumentError(
        `${what} is ${bytes.length} bytes, not the ${expected.size} its descriptor names`,
      );
    }
  }
  return { bytes, digest };
}

export function parseJson(bytes: Buffer, what: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new InvalidArgumentError(`${what} is not valid JSON: ${err instanceof Error ? err.message : err}`);
  }
}

import { InvalidArgumentError } from '../../core/index.js';

/**
 * Image names follow the docker/OCI reference grammar (github.com/distribution/reference):
 * an optional registry host[:port], then lower-case path components, then `:tag`. berth stores
 * names fully tagged, so `busybox` and `busybox:latest` are the same name.
 */
const pathComponent = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const domain =
  '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)';
const namePattern = new RegExp(`^(?:${domain}/)?${pathComponent}(?:/${pathComponent})*$`);
const tagPattern = /^[\w][\w.-]{0,127}$/;

export const defaultTag = 'latest';

export interface ParsedName {
  readonly repository: string;
  readonly tag: string;
}

/** Splits `repo[:tag]`: the tag is after the last colon that has no `/` after it (not a port). */
function split(text: string): ParsedName {
  const colon = text.lastIndexOf(':');
  if (colon > text.lastIndexOf('/')) return { repository: text.slice(0, colon), tag: text.slice(colon + 1) };
  return { repository: text, tag: defaultTag };
}

/** Whether `text` is a valid `name[:tag]` (no digest references: the store names images by tag). */
export function isImageName(text: string): boolean {
  if (text.includes('@') || text.length > 255) return false;
  const { repository, tag } = split(text);
  return namePattern.test(repository) && tagPattern.test(tag);
}

/** `busybox` → `busybox:latest`; refuses anything that is not a valid reference, naming it. */
export function normalizeImageName(text: string, flag = 'image name'): string {
  if (text.includes('@')) {
    throw new InvalidArgumentError(
      `Invalid ${flag} "${text}": digest references are not supported here; use NAME:TAG or the image id`,
      { name: text },
    );
  }
  if (!isImageName(text)) {
    throw new InvalidArgumentError(
      `Invalid ${flag} "${text}": expected NAME[:TAG] with a lower-case name such as busybox:1.36 or example.com/team/app:v1`,
      { name: text },
    );
  }
  const { repository, tag } = split(text);
  return `${repository}:${tag}`;
}

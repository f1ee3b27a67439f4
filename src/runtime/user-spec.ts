import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, InvalidArgumentError } from '../core/index.js';
import type { PodUser } from './pod-manifest.js';

interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

interface GroupEntry {
  readonly name: string;
  readonly gid: number;
  readonly members: readonly string[];
}

/**
 * Reads a file of the image's rootfs without following any symlink: an image's /etc/passwd that
 * is a symlink must not make berth read a host file. Missing or symlinked → undefined.
 */
function readImageFile(rootfs: string, path: string): string | undefined {
  let current = rootfs;
  for (const part of path.split('/').filter(Boolean)) {
    current = join(current, part);
    try {
      if (lstatSync(current).isSymbolicLink()) return undefined;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return undefined;
      throw err;
    }
  }
  return readFileSync(current, 'utf8');
}

function parsePasswd(text: string | undefined): PasswdEntry[] {
  return (text ?? '')
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 7 && /^\d+$/.test(f[2] ?? '') && /^\d+$/.test(f[3] ?? ''))
    .map((f) => ({ name: f[0] ?? '', uid: Number(f[2]), gid: Number(f[3]), home: f[5] || '/' }));
}

function parseGroup(text: string | undefined): GroupEntry[] {
  return (text ?? '')
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 4 && /^\d+$/.test(f[2] ?? ''))
    .map((f) => ({ name: f[0] ?? '', gid: Number(f[2]), members: (f[3] ?? '').split(',').filter(Boolean) }));
}

const isNumeric = (s: string) => /^\d+$/.test(s);

/**
 * Resolves `user[:group]` (names or numbers) against the image's /etc/passwd and /etc/group the
 * way podman does: a name must exist; a number need not (gid then defaults to 0 and HOME to "/");
 * supplementary groups come from /etc/group membership.
 */
export function resolveUser(rootfs: string, spec: string | undefined): PodUser {
  const text = spec === undefined || spec === '' ? '0' : spec;
  const [userPart = '', groupPart] = text.split(':', 2);
  if (userPart === '' || groupPart === '') {
    throw new InvalidArgumentError(`Invalid user "${text}": expected USER[:GROUP] with names or numbers`, {
      flag: 'user',
    });
  }
  const passwd = parsePasswd(readImageFile(rootfs, '/etc/passwd'));
  const groups = parseGroup(readImageFile(rootfs, '/etc/group'));
  let entry: PasswdEntry | undefined;
  let uid: number;
  if (isNumeric(userPart)) {
    uid = Number(userPart);
    entry = passwd.find((p) => p.uid === uid);
  } else {
    entry = passwd.find((p) => p.name === userPart);
    if (!entry) {
      throw new InvalidArgumentError(`Cannot find user "${userPart}" in the image's /etc/passwd`, {
        flag: 'user',
      });
    }
    uid = entry.uid;
  }
  let gid = entry?.gid ?? 0;
  if (groupPart !== undefined) {
    if (isNumeric(groupPart)) gid = Number(groupPart);
    else {
      const group = groups.find((g) => g.name === groupPart);
      if (!group) {
        throw new InvalidArgumentError(`Cannot find group "${groupPart}" in the image's /etc/group`, {
          flag: 'user',
        });
      }
      gid = group.gid;
    }
  }
  const additionalGids =
    entry && groupPart === undefined
      ? groups.filter((g) => g.members.includes(entry.name) && g.gid !== gid).map((g) => g.gid)
      : [];
  return { uid, gid, additionalGids, home: entry?.home ?? '/' };
}

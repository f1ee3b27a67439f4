import { readFileSync } from 'node:fs';
import { errnoCode } from '../../core/index.js';
import { writeStoreFile } from './store-files.js';
import type { StoreLayout } from './store-layout.js';

/** `name:tag` → image id. One small JSON file, replaced by rename under the names lock. */
export type NamesIndex = Record<string, string>;

export function readNames(layout: StoreLayout): NamesIndex {
  try {
    return JSON.parse(readFileSync(layout.namesFile, 'utf8')) as NamesIndex;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return {};
    throw err;
  }
}

export function writeNames(layout: StoreLayout, names: NamesIndex): Promise<void> {
  const sorted = Object.fromEntries(Object.entries(names).sort(([a], [b]) => a.localeCompare(b)));
  return writeStoreFile(layout, layout.namesFile, `${JSON.stringify(sorted, null, 2)}\n`);
}

export function namesOf(names: NamesIndex, id: string): string[] {
  return Object.keys(names)
    .filter((name) => names[name] === id)
    .sort();
}

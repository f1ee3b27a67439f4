/**
 * `npm run bench runtime-pods [COUNT]`: `berth list` and `berth gc` with COUNT (default 10,000)
 * exited pods on disk, each as a real process. Pods are written as stage 1 leaves them after
 * exit (run/<uuid> unlocked, with pod.json, started.json, exit.json and a log) so no runc is involved.
 * Goal (issue 2): each under 2 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeExitedPods } from '../testing/exited-pods.js';
import { fmt, medianMs, runOrThrow } from './bench-util.js';

const count = Number(process.argv[2] ?? 10_000);
const berth = new URL('../../bin/berth', import.meta.url).pathname;

const dir = mkdtempSync(join(tmpdir(), 'berth-bench-pods-'));
try {
  writeExitedPods(dir, count);
  const listJson = medianMs(3, () => runOrThrow(berth, ['list', '--dir', dir, '--format', 'json']));
  const listTable = medianMs(3, () => runOrThrow(berth, ['list', '--dir', dir]));
  const pods = (JSON.parse(runOrThrow(berth, ['list', '--dir', dir, '--format', 'json'])) as unknown[])
    .length;
  const gcMark = medianMs(1, () => runOrThrow(berth, ['gc', '--dir', dir, '--mark-only']));
  const listMarked = medianMs(3, () => runOrThrow(berth, ['list', '--dir', dir, '--format', 'json']));
  const gcSweep = medianMs(1, () => runOrThrow(berth, ['gc', '--dir', dir, '--grace-period', '0s']));
  rmSync(join(dir, 'pods'), { recursive: true, force: true });
  writeExitedPods(dir, count);
  const gcFull = medianMs(1, () => runOrThrow(berth, ['gc', '--dir', dir, '--grace-period', '0s']));
  // The floor for the sweep on this disk: rm -rf of the same marked tree, no locks, no checks.
  rmSync(join(dir, 'pods'), { recursive: true, force: true });
  writeExitedPods(dir, count);
  runOrThrow(berth, ['gc', '--dir', dir, '--mark-only']);
  const rmFloor = medianMs(1, () => runOrThrow('rm', ['-rf', join(dir, 'pods', 'exited-garbage')]));
  console.log(`pods on disk: ${pods} exited (goal: each command under 2 s)`);
  console.log(`berth list --format json   median ${fmt(listJson)}`);
  console.log(`berth list (table)         median ${fmt(listTable)}`);
  console.log(`berth gc --mark-only       ${fmt(gcMark)}  (${count} run/ → exited-garbage/)`);
  console.log(`berth list (all marked)    median ${fmt(listMarked)}`);
  console.log(`berth gc (sweep only)      ${fmt(gcSweep)}  (${count} deleted)`);
  console.log(`berth gc (mark + sweep)    ${fmt(gcFull)}  (${count} marked and deleted in one run)`);
  console.log(`rm -rf of the marked pods  ${fmt(rmFloor)}  (the disk's floor for the sweep)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

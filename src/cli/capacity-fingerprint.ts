import { existsSync, statfsSync } from 'node:fs';
import { totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';

/** What a machine has, as the cell finds it when it starts (Nomad's client fingerprint). */
export interface MachineTotals {
  /** Physical memory (os.totalmem). */
  readonly memoryBytes: number;
  /** Disk space unprivileged writers may still use on the data dir's file system (statfs bavail). */
  readonly diskAvailableBytes: number;
}

/** What a cell offers to work: MB of memory and disk. */
export interface OfferedCapacity {
  readonly memory_mb: number;
  readonly disk_mb: number;
}

const mib = 1024 * 1024;

/**
 * Kept back from the work for the OS, berth itself and the images and pods berth writes: a tenth
 * of memory but at least 512 MB, a tenth of the free disk but at least 1 GB. What remains is what
 * the cell offers, never below 256 MB so a tiny machine still takes one small instance.
 */
export const capacityReserve = {
  memoryFraction: 0.1,
  minMemoryMb: 512,
  diskFraction: 0.1,
  minDiskMb: 1024,
  floorMb: 256,
} as const;

/**
 * The capacity a cell advertises: the flags when given, else the machine's real memory and free
 * disk less the reserve. Pure: the totals are read by `readMachineTotals`.
 */
export function fingerprintCapacity(
  totals: MachineTotals,
  flags: { readonly memory_mb?: number | undefined; readonly disk_mb?: number | undefined } = {},
): OfferedCapacity {
  const offer = (bytes: number, fraction: number, minReserveMb: number): number => {
    const totalMb = Math.floor(bytes / mib);
    const reserve = Math.max(minReserveMb, Math.ceil(totalMb * fraction));
    return Math.max(capacityReserve.floorMb, totalMb - reserve);
  };
  return {
    memory_mb:
      flags.memory_mb ??
      offer(totals.memoryBytes, capacityReserve.memoryFraction, capacityReserve.minMemoryMb),
    disk_mb:
      flags.disk_mb ??
      offer(totals.diskAvailableBytes, capacityReserve.diskFraction, capacityReserve.minDiskMb),
  };
}

/** This machine's totals; the disk is the file system of `dataDir` (or of its nearest existing parent). */
export function readMachineTotals(dataDir: string): MachineTotals {
  let dir = resolve(dataDir);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const fs = statfsSync(dir);
  return { memoryBytes: totalmem(), diskAvailableBytes: Number(fs.bavail) * Number(fs.bsize) };
}

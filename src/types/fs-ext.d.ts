// fs-ext ships no types; these cover the part berth uses (flock(2)).
declare module 'fs-ext' {
  export type FlockFlag = 'sh' | 'ex' | 'shnb' | 'exnb' | 'un';
  export function flock(
    fd: number,
    flags: FlockFlag,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ): void;
  export function flockSync(fd: number, flags: FlockFlag): void;
}

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where Debian's busybox-static puts its binary; the test harness installs the package. */
export const busyboxBinary = '/bin/busybox';

/**
/**
 * Writes a minimal root filesystem made of Debian's static busybox: /bin/busybox plus one symlink
 * per applet, an /etc/passwd and /etc/group with root and nobody, and an empty /tmp. Tests turn it
 * into an image with `berth image import-rootfs` so no registry is needed.
 */
export function makeBusyboxRootfs(dir: string): string {
  if (!existsSync(busyboxBinary)) {
    throw new Error(`${busyboxBinary} is missing: install Debian's busybox-static (scripts/setup does)`);
  }
  for (const sub of ['bin', 'etc', 'tmp', 'root', 'home/nobody'])
    mkdirSync(join(dir, sub), { recursive: true });
  copyFileSync(busyboxBinary, join(dir, 'bin/busybox'));
  const applets = execFileSync(busyboxBinary, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const applet of applets) {
    if (applet === 'busybox') continue;
    const link = join(dir, 'bin', applet);
    if (!existsSync(link)) symlinkSync('busybox', link);
  }
  writeFileSync(
    join(dir, 'etc/passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home/nobody:/bin/sh\n',
  );
  writeFileSync(join(dir, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  return dir;
}

/**
 * `npm run bench runtime-run [RUNS]`: `berth run --rm <busybox> -- true` end to end, against bare
 * `runc run` of an equivalent bundle, `node -e 0`, and `podman run --rm` when podman is installed.
 * Prints medians and berth's own overhead (berth − runc − node start). Goal (issue 2): median ≤ 1/3
 * of podman's, overhead under 30 ms.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { fmt, hasCommand, medianMs, runOrThrow } from './bench-util.js';

const runs = Number(process.argv[2] ?? 20);
const berth = new URL('../../bin/berth', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'berth-bench-run-'));

try {
  const rootfs = makeBusyboxRootfs(join(work, 'rootfs'));
  const dataDir = join(work, 'data');
  runOrThrow(berth, ['image', 'import-rootfs', '--dir', dataDir, rootfs, '--name', 'bb:bench']);
  runOrThrow(berth, ['run', '--rm', '--dir', dataDir, 'bb:bench', '--', 'true']); // warm caches

  // Bare runc: the same rootfs, runc's own default spec with `true` as the process.
  const bundle = join(work, 'bundle');
  cpSync(rootfs, join(bundle, 'rootfs'), { recursive: true, verbatimSymlinks: true });
  runOrThrow('runc', ['spec', '--bundle', bundle]);
  const specPath = join(bundle, 'config.json');
  const spec = JSON.parse(spawnSync('cat', [specPath], { encoding: 'utf8' }).stdout) as {
    process: { terminal: boolean; args: string[] };
  };
  spec.process.terminal = false;
  spec.process.args = ['true'];
  writeFileSync(specPath, JSON.stringify(spec));
  const runcRoot = join(work, 'runc-root');
  let n = 0;

  // The equivalent bundle: the config.json berth writes for this very run (seccomp profile, root
  // overlay over the image, masked paths, bind-mounted hosts files, its namespaces), run by bare
  // runc. Only what is per pod changes: the overlay's upper and work dirs, and runc's default
  // cgroup path (berth puts its limits on a parent cgroup it makes itself).
  const podUuid = runOrThrow(berth, [
    'prepare',
    '--net',
    'none',
    '--dir',
    dataDir,
    'bb:bench',
    '--',
    'true',
  ]).trim();
  const podDir = join(dataDir, 'pods', 'prepared', podUuid);
  const sameBundle = join(work, 'berth-bundle');
  mkdirSync(join(sameBundle, 'rootfs'), { recursive: true });
  for (const dir of ['upper', 'work']) mkdirSync(join(sameBundle, dir));
  for (const file of ['hosts', 'hostname', 'resolv.conf'])
    copyFileSync(join(podDir, file), join(sameBundle, file));
  const podConfig = JSON.parse(readFileSync(join(podDir, 'config.json'), 'utf8')) as {
    mounts: { destination: string; options?: string[] }[];
    linux: { cgroupsPath?: string };
  };
  for (const mount of podConfig.mounts)
    if (mount.destination === '/' && mount.options)
      mount.options = mount.options.map((option) =>
        option
          .replace(/upperdir=[^,]*/, `upperdir=${join(sameBundle, 'upper')}`)
          .replace(/workdir=[^,]*/, `workdir=${join(sameBundle, 'work')}`),
      );
  delete podConfig.linux.cgroupsPath;
  writeFileSync(join(sameBundle, 'config.json'), JSON.stringify(podConfig));
  runOrThrow(berth, ['rm', '--dir', dataDir, podUuid]);

  const results: [string, number][] = [];
  results.push(['node -e 0', medianMs(runs, () => runOrThrow(process.execPath, ['-e', '0']))]);
  // bin/berth starts the pod commands without NODE_EXTRA_CA_CERTS (it costs Node 20 ~30 ms):
  // their node start is this one.
  const caCerts = process.env.NODE_EXTRA_CA_CERTS;
  if (caCerts !== undefined) {
    const { NODE_EXTRA_CA_CERTS: _, ...withoutCa } = process.env;
    results.push([
      'node -e 0, no NODE_EXTRA_CA_CERTS',
      medianMs(runs, () => spawnSync(process.execPath, ['-e', '0'], { env: withoutCa })),
    ]);
  }
  const runcOf = (dir: string) => () =>
    runOrThrow('runc', ['--root', runcRoot, 'run', '--bundle', dir, `bench-${n++}`]);
  const bareRunc = runcOf(bundle);
  results.push(['runc run (runc spec)', medianMs(runs, bareRunc)]);
  results.push(["runc run (berth's config.json)", medianMs(runs, runcOf(sameBundle))]);
  // Back to back, runc runs faster than it does after anything else has run (on the development
  // machine ~20 against ~30 ms); inside berth it always follows node's start. This is runc timed
  // in that position: each run right after a `node -e 0`, untimed.
  results.push([
    '  the same, each after node -e 0',
    medianMs(runs, runcOf(sameBundle), () => spawnSync(process.execPath, ['-e', '0'])),
  ]);
  results.push([
    'berth run --rm --net none',
    medianMs(runs, () =>
      runOrThrow(berth, ['run', '--rm', '--net', 'none', '--dir', dataDir, 'bb:bench', '--', 'true']),
    ),
  ]);
  results.push([
    'berth run --rm (private net)',
    medianMs(runs, () => runOrThrow(berth, ['run', '--rm', '--dir', dataDir, 'bb:bench', '--', 'true'])),
  ]);
  if (hasCommand('podman')) {
    spawnSync('sh', ['-c', `tar -C ${rootfs} -c . | podman import - localhost/bb:bench`], {
      stdio: 'ignore',
    });
    results.push([
      'podman run --rm --network none',
      medianMs(runs, () =>
        runOrThrow('podman', [
          'run',
          '--rm',
          '--ulimit',
          'nofile=1024:1024',
          '--ulimit',
          'nproc=1024:1024',
          '--network',
          'none',
          'localhost/bb:bench',
          'true',
        ]),
      ),
    ]);
    results.push([
      'podman run --rm',
      medianMs(runs, () =>
        runOrThrow('podman', [
          'run',
          '--rm',
          '--ulimit',
          'nofile=1024:1024',
          '--ulimit',
          'nproc=1024:1024',
          'localhost/bb:bench',
          'true',
        ]),
      ),
    ]);
  } else {
    console.log('podman is not installed: no podman comparison (apt-get install podman to add it)');
  }
  console.log(`median of ${runs} runs each`);
  for (const [name, ms] of results) console.log(`${name.padEnd(34)} ${fmt(ms)}`);
  const get = (name: string) => results.find(([n2]) => n2 === name)?.[1] ?? Number.NaN;
  const berthNone = get('berth run --rm --net none');
  const nodeStart = get(caCerts !== undefined ? 'node -e 0, no NODE_EXTRA_CA_CERTS' : 'node -e 0');
  const overhead = (runc: string) => fmt(berthNone - get(runc) - nodeStart);
  console.log(
    `berth's own overhead (berth --net none − runc of the same config.json − node start): ${overhead("runc run (berth's config.json)")} (goal < 30 ms)`,
  );
  console.log(
    `  with runc timed as it runs inside berth, after a node start: ${overhead('  the same, each after node -e 0')}`,
  );
  console.log(
    `  against runc's own default spec (no seccomp, overlay or limits): ${overhead('runc run (runc spec)')}`,
  );
  if (caCerts !== undefined)
    console.log(
      `  node start as bin/berth starts the pod commands, without NODE_EXTRA_CA_CERTS; with it: ${fmt(berthNone - get("runc run (berth's config.json)") - get('node -e 0'))}`,
    );
  const podman = get('podman run --rm');
  if (!Number.isNaN(podman)) {
    console.log(
      `berth / podman (default networks): ${(get('berth run --rm (private net)') / podman).toFixed(2)} (goal ≤ 0.33)`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

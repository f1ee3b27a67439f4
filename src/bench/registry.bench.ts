/**
 * `npm run bench registry [runs] [MiB]`: push and pull of a 100 MiB image (one uncompressed layer
 * of random bytes, so compression cannot shortcut it) over loopback against a real `berth server`
 * process, in MiB/s, next to skopeo copying the same image between two OCI layout directories
 * (`oci:` → `oci:`, a local copy with no network and no extraction: the ceiling for the copy).
 * berth's times are split into the blob transfer (streamed, hashed, fsynced) and the manifest
 * step, where the receiving store verifies diff_ids and flattens the layer into a rootfs.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pullImage, pushImage, RegistryClient } from '../registry/index.js';
import { openImageStore } from '../runtime/image/index.js';
import { startBenchServer } from './bench-server.js';
import { fmt, hasCommand, runOrThrow } from './bench-util.js';

const runs = Number(process.argv[2] ?? 3);
const mib = Number(process.argv[3] ?? 100);

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return [Number(process.hrtime.bigint() - start) / 1e6, value];
}

const work = mkdtempSync(join(tmpdir(), 'berth-bench-registry-'));
try {
  // The image: one file of random bytes, imported as a one-layer image (uncompressed tar).
  const rootfs = join(work, 'rootfs');
  mkdirSync(rootfs);
  writeFileSync(join(rootfs, 'random.bin'), randomBytes(mib * 1024 * 1024));
  const seed = openImageStore(join(work, 'seed'));
  await seed.importRootfs(rootfs, 'bench/big:1');
  const image = await seed.resolve('bench/big:1');
  const mediaType = seed.manifestByDigest(image.manifestDigest)?.mediaType ?? '';
  const manifest = JSON.parse(readFileSync(seed.blobPath(image.manifestDigest), 'utf8')) as {
    config: { digest: string; size: number };
    layers: { digest: string; size: number }[];
  };
  const bytes = manifest.layers.reduce((sum, l) => sum + l.size, manifest.config.size);
  const rate = (ms: number) => `${(bytes / 1024 / 1024 / (ms / 1000)).toFixed(0)} MiB/s`;

  // The same image as an OCI layout for skopeo (blobs hard-linked from the seed store).
  const layout = join(work, 'layout');
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  for (const digest of [
    image.manifestDigest,
    manifest.config.digest,
    ...manifest.layers.map((l) => l.digest),
  ]) {
    linkSync(seed.blobPath(digest), join(layout, 'blobs', 'sha256', digest.slice(7)));
  }
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const manifestSize = readFileSync(seed.blobPath(image.manifestDigest)).length;
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType, digest: image.manifestDigest, size: manifestSize }],
    }),
  );

  const push: number[] = [];
  const pushBlobs: number[] = [];
  const pull: number[] = [];
  const pullBlobs: number[] = [];
  const skopeo: number[] = [];
  for (let i = 0; i < runs; i++) {
    const { child, url } = await startBenchServer(join(work, `server-${i}`));
    try {
      const client = new RegistryClient({ serverUrl: url });
      // Push: the blobs alone, then the whole push (blobs now skipped) to get the manifest step.
      const [blobMs] = await timed(async () => {
        for (const l of manifest.layers)
          await client.pushBlob('bench/big', l.digest, seed.blobPath(l.digest));
        await client.pushBlob('bench/big', manifest.config.digest, seed.blobPath(manifest.config.digest));
      });
      const [manifestMs] = await timed(() => pushImage(seed, client, 'bench/big:1'));
      pushBlobs.push(blobMs);
      push.push(blobMs + manifestMs);

      const target = openImageStore(join(work, `pulled-${i}`));
      const [pullMs, result] = await timed(() => pullImage(target, client, 'bench/big:1'));
      if (result.image.id !== image.id) throw new Error('pulled a different image');
      pull.push(pullMs);
      // The blob part of a pull again, into a fresh store, without the import.
      const blobsOnly = openImageStore(join(work, `blobs-${i}`));
      const [fetchMs] = await timed(async () => {
        for (const d of [manifest.config, ...manifest.layers]) {
          await blobsOnly.putBlob(await client.getBlob('bench/big', d.digest), d);
        }
      });
      pullBlobs.push(fetchMs);
    } finally {
      child.kill('SIGTERM');
    }
    if (hasCommand('skopeo')) {
      const out = join(work, `skopeo-${i}`);
      const start = process.hrtime.bigint();
      runOrThrow('skopeo', ['copy', '--quiet', `oci:${layout}`, `oci:${out}`]);
      skopeo.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    rmSync(join(work, `server-${i}`), { recursive: true, force: true });
    rmSync(join(work, `pulled-${i}`), { recursive: true, force: true });
    rmSync(join(work, `blobs-${i}`), { recursive: true, force: true });
    rmSync(join(work, `skopeo-${i}`), { recursive: true, force: true });
  }

  console.log(
    `image: ${(bytes / 1024 / 1024).toFixed(1)} MiB (one uncompressed random layer); median of ${runs} runs`,
  );
  const row = (name: string, ms: number) =>
    console.log(`${name.padEnd(52)} ${fmt(ms).padStart(9)}  ${rate(ms)}`);
  row('berth image push (blobs + manifest import on server)', median(push));
  row('  of which blob upload over loopback', median(pushBlobs));
  row('berth image pull (blobs + verify + flatten)', median(pull));
  row('  blob download alone (stream, hash, fsync)', median(pullBlobs));
  if (skopeo.length > 0) row('skopeo copy oci: → oci: (local, no network)', median(skopeo));
  else console.log('skopeo is not installed: no comparison (apt-get install skopeo)');
} finally {
  rmSync(work, { recursive: true, force: true });
}

import type { CommandEntry, FlagSpecs } from './command.js';
import { durationFlag, formatFlags, noLegendFlag, serverFlags } from './command-flags.js';

const images = () => import('./image-commands.js');
const nameTag = { min: 1, max: 1, names: 'NAME[:TAG]' } as const;
const quiet: FlagSpecs = {
  quiet: { type: 'boolean', short: 'q', description: 'No progress bar or summary on stderr' },
};
const nameRef = { min: 1, max: 1, names: '[REGISTRY/]NAME[:TAG|@DIGEST]' } as const;
/** How to reach a registry other than the berth server (a reference naming its host). */
const remoteRegistryFlags: FlagSpecs = {
  creds: {
    type: 'string',
    valueName: 'USER:PASS',
    description: 'Credentials for the registry the image names (else the auth.json of podman login)',
  },
  authfile: {
    type: 'string',
    valueName: 'FILE',
    default: '$REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json',
    description: 'The auth file to read credentials from',
  },
  insecure: {
    type: 'boolean',
    description:
      'Reach the registry the image names over plain http (loopback always is; or list hosts in $BERTH_INSECURE_REGISTRIES)',
  },
};

/** The local image store, and copies to and from a berth server's registry. */
export const imageCommandTable: readonly CommandEntry[] = [
  {
    name: 'image import',
    summary:
      'Import a docker-archive or oci-archive tarball (plain or gzip) or an OCI layout directory; prints the image id.',
    flags: { name: { type: 'string', valueName: 'NAME:TAG', description: 'Name the imported image' } },
    positionals: { min: 1, max: 1, names: 'FILE|DIR' },
    load: images,
  },
  {
    name: 'image import-rootfs',
    summary: 'Make a single-layer image of a directory (Cmd /bin/sh, default PATH); prints the image id.',
    flags: { name: { type: 'string', valueName: 'NAME:TAG', description: 'Name of the image (required)' } },
    positionals: { min: 1, max: 1, names: 'DIR' },
    load: images,
  },
  {
    name: 'image list',
    summary: 'List the images in the store.',
    flags: { ...formatFlags(['table', 'json']), ...noLegendFlag },
    load: images,
  },
  {
    name: 'image rm',
    summary:
      'Remove an image name; the image goes when no name is left. An id removes the image and all its names.',
    positionals: { min: 1, max: 1, names: 'NAME[:TAG]|ID' },
    load: images,
  },
  {
    name: 'image push',
    summary:
      "Push a local image to a berth server's registry, or to the registry --as names (blobs it already has are skipped); prints the manifest digest.",
    flags: {
      as: {
        type: 'string',
        valueName: '[REGISTRY/]NAME:TAG',
        description: 'Push under another name (a registry host first pushes there)',
      },
      ...quiet,
      ...serverFlags,
      ...remoteRegistryFlags,
    },
    positionals: nameTag,
    load: images,
  },
  {
    name: 'image pull',
    summary:
      "Pull an image from a berth server's registry, or from any OCI registry its name starts with, into the local store, verifying every digest; from an index, the host's platform. Prints the image id.",
    flags: {
      platform: {
        type: 'string',
        valueName: 'OS/ARCH[/VARIANT]',
        default: "this host's",
        description: 'The platform to take from a multi-platform image',
      },
      ...quiet,
      ...serverFlags,
      ...remoteRegistryFlags,
    },
    positionals: nameRef,
    load: images,
  },
  {
    name: 'image prune',
    summary:
      'Delete what no image references: unreferenced blobs, rootfs dirs of removed images no live pod uses, debris of killed imports, and registry uploads idle past --grace. Blobs pushed or pulled within --grace (their manifest may still come) are kept.',
    flags: { grace: durationFlag('Keep what was written more recently than this', '1h') },
    load: images,
  },
];

import type { FlagSpecs } from './command.js';
import { envFlag } from './command-flags.js';

/**
 * rkt's separator of a pod's apps, and the flags each app takes: read by the command table (help,
 * parsing of the first app's flags) and by pod-app-args.ts for the apps after `---`.
 */
export const appSeparator = '---';

/** The flags each app of a pod takes (the first app's come with the pod's own flags). */
export const appFlags: FlagSpecs = {
  'app-name': {
    type: 'string',
    valueName: 'NAME',
    description: "The app's name in its pod (default: the image's)",
  },
  entrypoint: { type: 'string', valueName: 'CMD', description: "Replace the image's entrypoint" },
  env: envFlag,
  workdir: { type: 'string', short: 'w', valueName: 'DIR', description: 'Working directory inside the pod' },
  user: { type: 'string', short: 'u', valueName: 'USER[:GROUP]', description: 'Run the app as this user' },
  mount: {
    type: 'string',
    multiple: true,
    valueName: 'volume=NAME,target=/PATH[,readOnly=true]',
    description: 'Mount a volume of the pod in this app',
  },
  volume: {
    type: 'string',
    short: 'v',
    multiple: true,
    valueName: 'NAME,kind=host|empty,… | /HOST:/PATH[:ro] | VOLUME:/PATH[:ro]',
    description:
      'A pod volume (kind=host,source=/path[,readOnly=true] or kind=empty[,tmpfs=true,size=64m]); the short forms also mount it in this app (a berth volume is made if missing)',
  },
};

/**
 * berth's default seccomp profile: everything is allowed but the system calls below, which fail
 * with EPERM. What a podman or docker user expects their containers not to reach, chosen for the
 * kernel attack surface each opens rather than copied from either runtime's list. Most of them
 * already need a capability a pod does not have (the list also guards against a capability
 * added later); the ones that need none are why the profile exists: user namespaces, kernel
 * keyrings, io_uring, bpf, perf events and userfaultfd.
 */
const refused: Readonly<Record<string, string>> = {
  keyctl: 'kernel keyrings are not namespaced: one pod could read or fill another’s keys',
  add_key: 'kernel keyrings are not namespaced',
  request_key: 'kernel keyrings are not namespaced',
  bpf: 'loads programs into the kernel',
  perf_event_open: 'kernel profiling: leaks addresses and has been a steady source of exploits',
  userfaultfd: 'the usual tool for turning a kernel race into an exploit',
  io_uring_setup: 'io_uring: a second system call interface, a large attack surface',
  io_uring_enter: 'io_uring',
  io_uring_register: 'io_uring',
  open_by_handle_at: 'opens files by handle, bypassing the mount namespace (the "shocker" escape)',
  name_to_handle_at: 'the other half of open_by_handle_at',
  kexec_load: 'replaces the running kernel',
  kexec_file_load: 'replaces the running kernel',
  init_module: 'loads kernel modules',
  finit_module: 'loads kernel modules',
  delete_module: 'unloads kernel modules',
  mount: 'the pod gets its mounts from runc',
  umount2: 'the pod gets its mounts from runc',
  pivot_root: 'the pod gets its root from runc',
  swapon: 'host-wide swap',
  swapoff: 'host-wide swap',
  reboot: 'the host',
  acct: 'host-wide process accounting',
  settimeofday: 'the host clock is not namespaced',
  clock_settime: 'the host clock is not namespaced',
  clock_adjtime: 'the host clock is not namespaced',
  quotactl: 'host file system quotas',
  lookup_dcookie: 'kernel profiling internals',
  uselib: 'obsolete, a past source of exploits',
  vm86: 'obsolete (32-bit x86 only)',
  vm86old: 'obsolete (32-bit x86 only)',
};

/** clone(2) and unshare(2) flag for a new user namespace: needs no capability at all. */
const cloneNewUser = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;

/** The architectures a process of this machine can make system calls in (compat ABIs included). */
function architectures(): string[] | undefined {
  if (process.arch === 'x64') return ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'];
  if (process.arch === 'arm64') return ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'];
  return undefined;
}

export interface OciSeccomp {
  readonly defaultAction: string;
  readonly architectures?: readonly string[];
  readonly syscalls: readonly {
    readonly names: readonly string[];
    readonly action: string;
    readonly errnoRet?: number;
    readonly args?: readonly { index: number; value: number; valueTwo: number; op: string }[];
  }[];
}

/** The OCI `linux.seccomp` of every pod. */
export function defaultSeccompProfile(): OciSeccomp {
  const arches = architectures();
  const newUserNamespace = [
    { index: 0, value: cloneNewUser, valueTwo: cloneNewUser, op: 'SCMP_CMP_MASKED_EQ' },
  ];
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    ...(arches ? { architectures: arches } : {}),
    syscalls: [
      { names: Object.keys(refused), action: 'SCMP_ACT_ERRNO', errnoRet: EPERM },
      // A new user namespace would hand the app every capability over namespaces it then makes.
      { names: ['unshare', 'clone'], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM, args: newUserNamespace },
      // clone3 passes its flags in memory, where seccomp cannot look: ENOSYS makes the C library
      // fall back to clone(2), which the rule above can check.
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
    ],
  };
}

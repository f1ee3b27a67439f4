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

/** socket(2) address families and the one type refused below. */
const AF_INET = 2;
const AF_INET6 = 10;
const AF_PACKET = 17;
const AF_VSOCK = 40;
const SOCK_RAW = 3;
/**
 * The kernel's SOCK_TYPE_MASK: the type argument may carry SOCK_NONBLOCK and SOCK_CLOEXEC in its
 * high bits, so `socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, …)` must be caught by the low bits alone.
 */
const sockTypeMask = 0xf;

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

type SyscallRule = OciSeccomp['syscalls'][number];

/**
 * socket(2) refused for one address family, and (when `type` is given) only for that socket type.
 * The conditions of one rule all have to hold (libseccomp ANDs them). On 32-bit x86 the same rule
 * also refuses socketcall(SYS_SOCKET) whatever its arguments, which seccomp cannot read: closed
 * rather than open, since any process (a 64-bit one through `int 0x80` too) can make that call.
 * 32-bit x86 programs whose C library creates sockets through socketcall(2) get none.
 */
function socketRule(errnoRet: number, family: number, type?: number): SyscallRule {
  const args = [{ index: 0, value: family, valueTwo: 0, op: 'SCMP_CMP_EQ' }];
  if (type !== undefined)
    args.push({ index: 1, value: sockTypeMask, valueTwo: type, op: 'SCMP_CMP_MASKED_EQ' });
  return { names: ['socket'], action: 'SCMP_ACT_ERRNO', errnoRet, args };
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
      // Sockets that see or forge other traffic than the pod's own, refused as podman's profile
      // refuses them to a container without CAP_NET_RAW (berth's capability set keeps it, as
      // containerd's does, but no pod gets these sockets with it): AF_PACKET (any frame on the pod's link: ARP spoofing, sniffing), raw IPv4 and IPv6 (any
      // header, any protocol). EPERM is what the kernel itself answers without the capability, so
      // tools fall back as they would there (busybox and iputils ping use an ICMP datagram socket,
      // which the pod's ping_group_range allows, see oci-config.ts).
      ...[AF_PACKET].map((family) => socketRule(EPERM, family)),
      ...[AF_INET, AF_INET6].map((family) => socketRule(EPERM, family, SOCK_RAW)),
      // AF_VSOCK talks to the hypervisor or the host's vsock services, past every network namespace.
      // EPERM too: on 32-bit x86, libseccomp turns every socket rule into one on socketcall(2)
      // (whose arguments sit in memory) and refuses two such rules with different actions.
      socketRule(EPERM, AF_VSOCK),
    ],
  };
}

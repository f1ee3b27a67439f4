// berth's native addon: the few Linux system calls Node.js has no binding for.
//
// flock(fd, operation) and flockWait(fd, operation, callback) are flock(2) itself, the whole of
// a pod's process-bound state: a try (LOCK_NB) or an unlock at once, a blocking wait on a thread
// of libuv's pool, so `status --wait` sleeps in the kernel instead of polling.
//
// createNetns(dir, name) / deleteNetns(path) make and remove a named network namespace as
// `ip netns add|del` do (a bind mount of the namespace on a file in a shared-propagation dir),
// with its loopback device up as the CNI loopback plugin would bring it, in this process rather
// than in spawned ones per pod; the new namespace is made by a short-lived thread, so node's own
// threads never leave the host's.
//
// openConfinedDir(path) opens a directory through a private, detached, read-only copy of its
// mount (open_tree(2) with OPEN_TREE_CLONE, then mount_setattr(2)). The pod's lock fd is opened
// this way because it is passed into the container (runc --preserve-fds): on a detached mount
// ".." stops at the directory itself and nothing can be written through it, so the container
// holds its pod's lock without a way out to the host's filesystem through that fd.
//
// spawnProcess(file, args, env, fds, newSession) starts a program with posix_spawn(3), which
// glibc runs as clone(CLONE_VM|CLONE_VFORK): a few hundred microseconds whatever node's size,
// where node's child_process forks the whole process first (1.5–3 ms for a fresh node on the
// development machine, more as its heap grows). fds[i] becomes the child's fd i (-1: /dev/null)
// and every other fd is closed. watchExit(pid, callback, keepAlive) reports that child's end
// from node's event loop (a pidfd polled by libuv, then waitpid), so no thread blocks meanwhile.
// pipe() makes a close-on-exec pipe for a child's stdio; randomBytes(n) is getrandom(2).
// Together they let `berth run` start runc without loading node:child_process or node:crypto.
//
// sendFile(socketFd, fileFd, offset, length, idleTimeoutMs, callback) sends part of a file to a
// socket with sendfile(2), the registry's blob bodies: the kernel copies page cache to the socket,
// where node would read every byte into the process and write it out again. It runs on a thread
// of its own (not libuv's pool, whose four threads a few slow clients would otherwise hold for
// whole blobs, stalling every fs call of the server), on dups of both fds, so that node closing
// the socket meanwhile cannot hand its number to another file under the thread.
//
// socketpair() makes a close-on-exec unix stream socket pair; sendFds(socket, data, fds) sends a
// message with open fds (SCM_RIGHTS) and recvFds(socket) waits for one (blocking), returning its
// bytes and the fds, close-on-exec, or null at the end of the stream; dupTo(from, to) is dup2(2).
// They hand a pod to a stage-1 holder that is already running (holder-pool.ts): its lock, its
// log and its answer pipe, without a new node process per pod.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <uv.h>

// The system call numbers are the same on every architecture since Linux 5.1 (424 and up).
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define BERTH_MOUNT_ATTR_RDONLY 0x00000001
#define BERTH_MOUNT_ATTR_NOSUID 0x00000002
#define BERTH_MOUNT_ATTR_NODEV 0x00000004
#define BERTH_MOUNT_ATTR_NOEXEC 0x00000008

struct berth_mount_attr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

static const char *errno_code(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENOMEM: return "ENOMEM";
    case EEXIST: return "EEXIST";
    case EAGAIN: return "EAGAIN";
    case EBADF: return "EBADF";
    case EINTR: return "EINTR";
    case ENOLCK: return "ENOLCK";
    case EBUSY: return "EBUSY";
    case ESRCH: return "ESRCH";
    case ECHILD: return "ECHILD";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EPIPE: return "EPIPE";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENOTCONN: return "ENOTCONN";
    case ENOTSOCK: return "ENOTSOCK";
    case ECANCELED: return "ECANCELED";
    default: return "EUNKNOWN";
  }
}

// An Error whose code is the errno's name (as Node's fs errors have), whose errno is negative (as
// theirs is) and whose message names the step and what it was done to.
static napi_value errno_error(napi_env env, int err, const char *step, const char *what) {
  char message[4200];
  snprintf(message, sizeof message, "%s: %s, %s '%s'", errno_code(err), strerror(err), step, what);
  napi_value code, msg, error, errno_value;
  napi_create_string_utf8(env, errno_code(err), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_create_int32(env, -err, &errno_value);
  napi_set_named_property(env, error, "errno", errno_value);
  return error;
}

static napi_value throw_errno(napi_env env, int err, const char *step, const char *what) {
  napi_throw(env, errno_error(env, err, step, what));
  return NULL;
}

// Reads string argument `index` into `out`; false (with a TypeError thrown) if it is not one.
static int string_arg(napi_env env, napi_value *argv, size_t argc, size_t index, char *out, size_t size,
                      const char *usage) {
  size_t length = 0;
  if (index >= argc || napi_get_value_string_utf8(env, argv[index], out, size, &length) != napi_ok ||
      length == 0 || length >= size - 1) {
    napi_throw_type_error(env, NULL, usage);
    return 0;
  }
  return 1;
}

// For the functions of one path argument: reads it into `out`, or throws a TypeError with `usage`.
static int path_arg(napi_env env, napi_callback_info info, char *out, size_t size, const char *usage) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  return string_arg(env, argv, argc, 0, out, size, usage);
}

static napi_value open_confined_dir(napi_env env, napi_callback_info info) {
  char path[4097];
  if (!path_arg(env, info, path, sizeof path, "openConfinedDir(path): path must be a non-empty string"))
    return NULL;
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (tree < 0) return throw_errno(env, errno, "open_tree", path);
  struct berth_mount_attr attr = {
      .attr_set = BERTH_MOUNT_ATTR_RDONLY | BERTH_MOUNT_ATTR_NOSUID | BERTH_MOUNT_ATTR_NODEV |
                  BERTH_MOUNT_ATTR_NOEXEC,
  };
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    int err = errno;
    close(tree);
    return throw_errno(env, err, "mount_setattr", path);
  }
  // open_tree gives an O_PATH fd, on which flock(2) fails: open the directory itself through it.
  int fd = openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int err = errno;
  close(tree);
  if (fd < 0) return throw_errno(env, err, "openat", path);
  napi_value result;
  napi_create_int32(env, fd, &result);
  return result;
}

// The dir holding named namespaces must propagate mounts (shared), so a namespace mounted there
// later is seen by every mount namespace that copied it, runc's included. If it is not a mount
// point yet, it becomes one by a bind mount onto itself.
static int make_shared_dir(const char *dir) {
  if (mkdir(dir, 0755) < 0 && errno != EEXIST) return errno;
  for (int attempt = 0;; attempt++) {
    if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) == 0) return 0;
    if (errno != EINVAL || attempt > 0) return errno;
    if (mount(dir, dir, "none", MS_BIND | MS_REC, NULL) < 0) return errno;
  }
}

struct netns_job {
  const char *path;
  int err;
  const char *step;
};

// A new network namespace has its loopback device down: 127.0.0.1 would not answer in the pod.
// (The CNI loopback plugin does this; runc does it only for namespaces it makes itself.)
static int loopback_up(void) {
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return errno;
  struct ifreq request;
  memset(&request, 0, sizeof request);
  strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  int err = 0;
  if (ioctl(sock, SIOCGIFFLAGS, &request) < 0) err = errno;
  else {
    request.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(sock, SIOCSIFFLAGS, &request) < 0) err = errno;
  }
  close(sock);
  return err;
}

// Runs on a thread of its own: unshare(CLONE_NEWNET) moves only the calling thread, and the bind
// mount keeps the namespace alive once the thread has ended.
static void *netns_thread(void *arg) {
  struct netns_job *job = arg;
  if (unshare(CLONE_NEWNET) < 0) {
    job->err = errno;
    job->step = "unshare";
  } else if ((job->err = loopback_up()) != 0) {
    job->step = "loopback up";
  } else if (mount("/proc/thread-self/ns/net", job->path, "none", MS_BIND, NULL) < 0) {
    job->err = errno;
    job->step = "mount";
  }
  return NULL;
}

static napi_value create_netns(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  static const char *usage = "createNetns(dir, name): dir and name must be non-empty strings";
  char dir[2048], name[256], path[2400];
  if (!string_arg(env, argv, argc, 0, dir, sizeof dir, usage) ||
      !string_arg(env, argv, argc, 1, name, sizeof name, usage))
    return NULL;
  if (strchr(name, '/') != NULL) {
    napi_throw_type_error(env, NULL, "createNetns(dir, name): name must not contain '/'");
    return NULL;
  }
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int err = make_shared_dir(dir);
  if (err != 0) return throw_errno(env, err, "mount --make-shared", dir);
  int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return throw_errno(env, errno, "create", path);
  close(fd);
  struct netns_job job = {.path = path, .err = 0, .step = NULL};
  pthread_t thread;
  err = pthread_create(&thread, NULL, netns_thread, &job);
  if (err == 0) err = pthread_join(thread, NULL);
  else job.step = "pthread_create";
  if (err == 0 && job.err != 0) err = job.err;
  if (err != 0) {
    unlink(path);
    return throw_errno(env, err, job.step ? job.step : "pthread_join", path);
  }
  return NULL;
}

// Unmounts (lazily: a process may still be in it) and removes a named namespace; a missing one is
// no error.
static napi_value delete_netns(napi_env env, napi_callback_info info) {
  char path[2400];
  if (!path_arg(env, info, path, sizeof path, "deleteNetns(path): path must be a non-empty string"))
    return NULL;
  if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
    return throw_errno(env, errno, "umount", path);
  if (unlink(path) < 0 && errno != ENOENT) return throw_errno(env, errno, "unlink", path);
  return NULL;
}

// Reads the (fd, operation) arguments of both flock functions; false with a TypeError if wrong.
static int flock_args(napi_env env, napi_value *argv, size_t argc, int *fd, int *operation) {
  if (argc < 2 || napi_get_value_int32(env, argv[0], fd) != napi_ok ||
      napi_get_value_int32(env, argv[1], operation) != napi_ok || *fd < 0 ||
      (*operation & ~(LOCK_SH | LOCK_EX | LOCK_NB | LOCK_UN)) != 0) {
    napi_throw_type_error(env, NULL, "flock(fd, operation): an fd and LOCK_SH|LOCK_EX|LOCK_UN, maybe |LOCK_NB");
    return 0;
  }
  return 1;
}

static napi_value flock_error(napi_env env, int err, int fd) {
  char what[32];
  snprintf(what, sizeof what, "fd %d", fd);
  return errno_error(env, err, "flock", what);
}

static int flock_retrying(int fd, int operation) {
  int rc;
  do rc = flock(fd, operation);
  while (rc < 0 && errno == EINTR);
  return rc < 0 ? errno : 0;
}

static napi_value flock_now(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd, operation;
  if (!flock_args(env, argv, argc, &fd, &operation)) return NULL;
  int err = flock_retrying(fd, operation);
  if (err != 0) napi_throw(env, flock_error(env, err, fd));
  return NULL;
}

struct flock_work {
  int fd;
  int operation;
  int err;
  napi_ref callback;
  napi_async_work work;
};

static void flock_execute(napi_env env, void *data) {
  (void)env;
  struct flock_work *job = data;
  job->err = flock_retrying(job->fd, job->operation);
}

static void flock_complete(napi_env env, napi_status status, void *data) {
  struct flock_work *job = data;
  napi_value callback, global, argument;
  napi_get_reference_value(env, job->callback, &callback);
  napi_get_global(env, &global);
  if (status != napi_ok || job->err != 0)
    argument = flock_error(env, status != napi_ok ? ECANCELED : job->err, job->fd);
  else
    napi_get_null(env, &argument);
  napi_call_function(env, global, callback, 1, &argument, NULL);
  napi_delete_reference(env, job->callback);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value flock_wait(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd, operation;
  if (!flock_args(env, argv, argc, &fd, &operation)) return NULL;
  napi_valuetype type = napi_undefined;
  if (argc < 3 || napi_typeof(env, argv[2], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "flockWait(fd, operation, callback): callback must be a function");
    return NULL;
  }
  struct flock_work *job = calloc(1, sizeof *job);
  if (job == NULL) return throw_errno(env, ENOMEM, "flock", "wait");
  job->fd = fd;
  job->operation = operation;
  napi_value name;
  napi_create_string_utf8(env, "berth.flockWait", NAPI_AUTO_LENGTH, &name);
  napi_create_reference(env, argv[2], 1, &job->callback);
  napi_create_async_work(env, NULL, name, flock_execute, flock_complete, job, &job->work);
  napi_queue_async_work(env, job->work);
  return NULL;
}

// Reads a JS array of strings into a NULL-terminated, malloc'd vector (free with free_strings).
// Returns NULL with a TypeError thrown if it is not one.
static char **string_array_arg(napi_env env, napi_value value, const char *usage) {
  bool is_array = false;
  uint32_t length = 0;
  if (napi_is_array(env, value, &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, value, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, usage);
    return NULL;
  }
  char **strings = calloc((size_t)length + 1, sizeof *strings);
  if (strings == NULL) {
    throw_errno(env, ENOMEM, "spawn", "arguments");
    return NULL;
  }
  for (uint32_t i = 0; i < length; i++) {
    napi_value item;
    size_t size = 0;
    if (napi_get_element(env, value, i, &item) != napi_ok ||
        napi_get_value_string_utf8(env, item, NULL, 0, &size) != napi_ok ||
        (strings[i] = malloc(size + 1)) == NULL ||
        napi_get_value_string_utf8(env, item, strings[i], size + 1, &size) != napi_ok ||
        strlen(strings[i]) != size) {
      // Not a string, or one with a NUL inside that exec would cut short.
      for (uint32_t j = 0; j <= i; j++) free(strings[j]);
      free(strings);
      napi_throw_type_error(env, NULL, usage);
      return NULL;
    }
  }
  return strings;
}

static void free_strings(char **strings) {
  if (strings == NULL) return;
  for (char **s = strings; *s != NULL; s++) free(*s);
  free(strings);
}

#define SPAWN_MAX_FDS 16

static napi_value spawn_process(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  static const char *usage =
      "spawnProcess(file, args, env, fds, newSession): file a non-empty string, args and env arrays of "
      "strings without NUL, fds an array of at most 16 fds (-1 for /dev/null), newSession a boolean";
  char file[4097];
  if (argc < 5 || !string_arg(env, argv, argc, 0, file, sizeof file, usage)) return NULL;
  bool new_session = false;
  bool fds_is_array = false;
  uint32_t nfds = 0;
  if (napi_get_value_bool(env, argv[4], &new_session) != napi_ok ||
      napi_is_array(env, argv[3], &fds_is_array) != napi_ok || !fds_is_array ||
      napi_get_array_length(env, argv[3], &nfds) != napi_ok || nfds > SPAWN_MAX_FDS) {
    napi_throw_type_error(env, NULL, usage);
    return NULL;
  }
  int fds[SPAWN_MAX_FDS];
  for (uint32_t i = 0; i < nfds; i++) {
    napi_value item;
    if (napi_get_element(env, argv[3], i, &item) != napi_ok ||
        napi_get_value_int32(env, item, &fds[i]) != napi_ok || fds[i] < -1) {
      napi_throw_type_error(env, NULL, usage);
      return NULL;
    }
  }
  char **args = string_array_arg(env, argv[1], usage);
  if (args == NULL) return NULL;
  char **envp = string_array_arg(env, argv[2], usage);
  if (envp == NULL) {
    free_strings(args);
    return NULL;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // A source fd below nfds could be overwritten by an earlier dup2 (or be its own target, which
  // dup2 leaves close-on-exec): such sources are first copied above the targets.
  int copies[SPAWN_MAX_FDS];
  int ncopies = 0;
  int err = 0;
  for (uint32_t i = 0; i < nfds && err == 0; i++) {
    int source = fds[i];
    if (source == -1) {
      err = posix_spawn_file_actions_addopen(&actions, (int)i, "/dev/null", O_RDWR, 0);
      continue;
    }
    if (source < (int)nfds) {
      source = fcntl(source, F_DUPFD_CLOEXEC, (int)nfds);
      if (source < 0) {
        err = errno;
        break;
      }
      copies[ncopies++] = source;
    }
    err = posix_spawn_file_actions_adddup2(&actions, source, (int)i);
  }
  if (err == 0) err = posix_spawn_file_actions_addclosefrom_np(&actions, (int)nfds);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  // Node ignores SIGPIPE, and an ignored signal stays ignored across exec: every signal starts at
  // its default, none blocked, as a shell would start the program.
  if (err == 0) err = posix_spawnattr_setsigmask(&attr, &empty);
  if (err == 0) err = posix_spawnattr_setsigdefault(&attr, &defaults);
  if (err == 0)
    err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                              (new_session ? POSIX_SPAWN_SETSID : 0));
  pid_t pid = -1;
  if (err == 0) err = posix_spawnp(&pid, file, &actions, &attr, args, envp);
  for (int i = 0; i < ncopies; i++) close(copies[i]);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  free_strings(args);
  free_strings(envp);
  if (err != 0) return throw_errno(env, err, "spawn", file);
  napi_value result;
  napi_create_int32(env, pid, &result);
  return result;
}

struct exit_watch {
  uv_poll_t poll;
  napi_env env;
  napi_ref callback;
  napi_async_context context;
  pid_t pid;
  int pidfd;
};

static void exit_watch_closed(uv_handle_t *handle) {
  struct exit_watch *watch = handle->data;
  close(watch->pidfd);
  free(watch);
}

// The pidfd turns readable once the process has exited: reap it and hand (code, signal) to JS,
// code null when a signal ended it. ECHILD (reaped elsewhere) reports (null, null).
static void exit_watch_ready(uv_poll_t *poll, int status, int events) {
  (void)status;
  (void)events;
  struct exit_watch *watch = poll->data;
  int wstatus = 0;
  pid_t reaped;
  do reaped = waitpid(watch->pid, &wstatus, WNOHANG);
  while (reaped < 0 && errno == EINTR);
  if (reaped == 0) return;
  uv_poll_stop(poll);
  napi_env env = watch->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value args[2], callback, global;
  if (reaped > 0 && WIFEXITED(wstatus)) napi_create_int32(env, WEXITSTATUS(wstatus), &args[0]);
  else napi_get_null(env, &args[0]);
  if (reaped > 0 && WIFSIGNALED(wstatus)) napi_create_int32(env, WTERMSIG(wstatus), &args[1]);
  else napi_get_null(env, &args[1]);
  napi_get_reference_value(env, watch->callback, &callback);
  napi_get_global(env, &global);
  if (napi_make_callback(env, watch->context, global, callback, 2, args, NULL) == napi_pending_exception) {
    // Nothing of ours is on the stack to catch it: it is an uncaught exception, as node's own
    // callbacks' would be.
    napi_value error;
    napi_get_and_clear_last_exception(env, &error);
    napi_fatal_exception(env, error);
  }
  napi_close_handle_scope(env, scope);
  napi_delete_reference(env, watch->callback);
  napi_async_destroy(env, watch->context);
  uv_close((uv_handle_t *)poll, exit_watch_closed);
}

static napi_value watch_exit(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t pid = 0;
  bool keep_alive = true;
  napi_valuetype type = napi_undefined;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &pid) != napi_ok || pid <= 0 ||
      napi_typeof(env, argv[1], &type) != napi_ok || type != napi_function ||
      (argc > 2 && napi_get_value_bool(env, argv[2], &keep_alive) != napi_ok)) {
    napi_throw_type_error(env, NULL,
                          "watchExit(pid, callback, keepAlive): a child's pid, a function and a boolean");
    return NULL;
  }
  char what[32];
  snprintf(what, sizeof what, "pid %d", pid);
  // Only a child of ours can be reaped here: anything else is ECHILD now, not a silent wait.
  siginfo_t probe;
  if (waitid(P_PID, (id_t)pid, &probe, WEXITED | WNOHANG | WNOWAIT) < 0)
    return throw_errno(env, errno, "waitid", what);
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) return throw_errno(env, errno, "pidfd_open", what);
  fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  uv_loop_t *loop = NULL;
  struct exit_watch *watch = calloc(1, sizeof *watch);
  // libuv's errors are negative errnos on Linux.
  int rc = -ENOMEM;
  if (watch != NULL) rc = napi_get_uv_event_loop(env, &loop) == napi_ok ? 0 : -EINVAL;
  if (rc == 0) rc = uv_poll_init(loop, &watch->poll, pidfd);
  if (rc != 0) {
    free(watch);
    close(pidfd);
    return throw_errno(env, -rc, "watch", what);
  }
  watch->poll.data = watch;
  watch->env = env;
  watch->pid = pid;
  watch->pidfd = pidfd;
  napi_value name;
  napi_create_string_utf8(env, "berth.watchExit", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, NULL, name, &watch->context);
  napi_create_reference(env, argv[1], 1, &watch->callback);
  uv_poll_start(&watch->poll, UV_READABLE, exit_watch_ready);
  // Not keeping the loop alive is node's child.unref(): the end is still reported if it runs.
  if (!keep_alive) uv_unref((uv_handle_t *)&watch->poll);
  return NULL;
}

// Two fds as a JavaScript array [first, second] (a pipe's read and write ends, a socket pair).
static napi_value fd_pair(napi_env env, const int ends[2]) {
  napi_value result, first, second;
  napi_create_array_with_length(env, 2, &result);
  napi_create_int32(env, ends[0], &first);
  napi_create_int32(env, ends[1], &second);
  napi_set_element(env, result, 0, first);
  napi_set_element(env, result, 1, second);
  return result;
}

static napi_value make_pipe(napi_env env, napi_callback_info info) {
  (void)info;
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) < 0) return throw_errno(env, errno, "pipe", "stdio");
  return fd_pair(env, ends);
}

static napi_value make_socketpair(napi_env env, napi_callback_info info) {
  (void)info;
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) < 0)
    return throw_errno(env, errno, "socketpair", "holder control");
  return fd_pair(env, ends);
}

#define MAX_PASSED_FDS 8

static napi_value send_fds(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t socket_fd = -1;
  void *data = NULL;
  size_t length = 0;
  uint32_t count = 0;
  bool is_array = false;
  if (argc < 3 || napi_get_value_int32(env, argv[0], &socket_fd) != napi_ok ||
      napi_get_buffer_info(env, argv[1], &data, &length) != napi_ok || length == 0 ||
      napi_is_array(env, argv[2], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, argv[2], &count) != napi_ok || count > MAX_PASSED_FDS) {
    napi_throw_type_error(env, NULL, "sendFds(socket, data, fds): a non-empty Buffer, at most 8 fds");
    return NULL;
  }
  int fds[MAX_PASSED_FDS];
  for (uint32_t i = 0; i < count; i++) {
    napi_value element;
    napi_get_element(env, argv[2], i, &element);
    if (napi_get_value_int32(env, element, &fds[i]) != napi_ok) {
      napi_throw_type_error(env, NULL, "sendFds: fds must be numbers");
      return NULL;
    }
  }
  struct iovec iov = {.iov_base = data, .iov_len = length};
  union {
    char buf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (count > 0) {
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * count);
    memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * count);
  }
  ssize_t sent;
  do sent = sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent < 0) return throw_errno(env, errno, "sendmsg", "holder control");
  if ((size_t)sent != length) return throw_errno(env, EAGAIN, "sendmsg", "holder control (partly sent)");
  return NULL;
}

static napi_value recv_fds(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t socket_fd = -1;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &socket_fd) != napi_ok) {
    napi_throw_type_error(env, NULL, "recvFds(socket)");
    return NULL;
  }
  char data[4096];
  struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
  union {
    char buf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
    struct cmsghdr align;
  } control;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                       .msg_controllen = sizeof control.buf};
  ssize_t got;
  do got = recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  if (got < 0) return throw_errno(env, errno, "recvmsg", "holder control");
  napi_value result;
  if (got == 0) {
    napi_get_null(env, &result);
    return result;
  }
  napi_value bytes, fd_list;
  void *copy = NULL;
  napi_create_buffer_copy(env, (size_t)got, data, &copy, &bytes);
  napi_create_array(env, &fd_list);
  uint32_t n = 0;
  for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t fd_count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int *received = (int *)CMSG_DATA(cmsg);
    for (size_t i = 0; i < fd_count; i++) {
      napi_value fd_value;
      napi_create_int32(env, received[i], &fd_value);
      napi_set_element(env, fd_list, n++, fd_value);
    }
  }
  napi_create_object(env, &result);
  napi_set_named_property(env, result, "data", bytes);
  napi_set_named_property(env, result, "fds", fd_list);
  return result;
}

static napi_value dup_to(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t from = -1, to = -1;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &from) != napi_ok ||
      napi_get_value_int32(env, argv[1], &to) != napi_ok) {
    napi_throw_type_error(env, NULL, "dupTo(from, to)");
    return NULL;
  }
  if (dup2(from, to) < 0) return throw_errno(env, errno, "dup2", "fd");
  return NULL;
}

static napi_value random_bytes(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t length = 0;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &length) != napi_ok || length < 1 || length > 256) {
    napi_throw_type_error(env, NULL, "randomBytes(n): n from 1 to 256");
    return NULL;
  }
  void *data = NULL;
  napi_value buffer;
  napi_create_buffer(env, (size_t)length, &data, &buffer);
  for (ssize_t done = 0; done < length;) {
    ssize_t got = getrandom((char *)data + done, (size_t)(length - done), 0);
    if (got < 0 && errno != EINTR) return throw_errno(env, errno, "getrandom", "bytes");
    if (got > 0) done += got;
  }
  return buffer;
}

// getxattr(2) of `path` (following a last symlink, so a /proc/self/fd/N path reaches the fd's own
// file): the value as a string, or null when the file has no such attribute (ENODATA) or its file
// system keeps none (ENOTSUP). Overlay directories marked opaque carry "trusted.overlay.opaque".
static napi_value get_xattr(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  const char *usage = "getxattr(path, name): both must be non-empty strings";
  char path[4097];
  char name[256];
  if (!string_arg(env, argv, argc, 0, path, sizeof path, usage)) return NULL;
  if (!string_arg(env, argv, argc, 1, name, sizeof name, usage)) return NULL;
  char value[256];
  ssize_t length = getxattr(path, name, value, sizeof value);
  napi_value result;
  if (length < 0) {
    if (errno == ENODATA || errno == ENOTSUP) {
      napi_get_null(env, &result);
      return result;
    }
    return throw_errno(env, errno, "getxattr", path);
  }
  napi_create_string_utf8(env, value, (size_t)length, &result);
  return result;
}

// At most this many sends at once (a thread each); past it sendFile returns null and the caller
// writes the body itself.
#define SEND_MAX_THREADS 64
// What one sendfile(2) call may move (Linux's own limit for one call).
#define SEND_MAX_CALL 0x7ffff000
static atomic_int send_threads;

struct file_send {
  // Dups of the caller's fds, closed on the main thread once the send has ended.
  int socket_fd;
  int file_fd;
  int caller_socket_fd;
  int64_t offset;
  int64_t length;
  int timeout_ms;
  // Written by the sending thread, read on the main thread once it has ended.
  int64_t sent;
  int err;
  // Main thread only: whether its end has been handled (fds closed), and who still holds it
  // (the thread's threadsafe function and the JS handle; freed at 0).
  int ended;
  int refs;
  napi_threadsafe_function done;
};

static void file_send_unref(struct file_send *job) {
  if (--job->refs == 0) free(job);
}

// Main thread: the fds go, the thread's slot is free again.
static void file_send_end(struct file_send *job) {
  if (job->ended) return;
  job->ended = 1;
  close(job->socket_fd);
  close(job->file_fd);
  atomic_fetch_sub(&send_threads, 1);
}

// sendfile(2) until the range is sent. The socket is non-blocking (libuv's): on EAGAIN this thread
// waits in poll(2) for room, at most timeout_ms without progress. Stops at the first error
// (EPIPE, ECONNRESET: the client is gone; shutdown by sendFileCancel gives EPIPE) or when the file
// ends early (sent < length, no error).
static void *file_send_thread(void *arg) {
  struct file_send *job = arg;
  off_t offset = (off_t)job->offset;
  while (job->sent < job->length) {
    int64_t left = job->length - job->sent;
    ssize_t n = sendfile(job->socket_fd, job->file_fd, &offset, left > SEND_MAX_CALL ? SEND_MAX_CALL : (size_t)left);
    if (n > 0) {
      job->sent += n;
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      job->err = errno;
      break;
    }
    struct pollfd room = {.fd = job->socket_fd, .events = POLLOUT, .revents = 0};
    int ready = poll(&room, 1, job->timeout_ms);
    if (ready == 0) {
      job->err = ETIMEDOUT;
      break;
    }
    if (ready < 0 && errno != EINTR) {
      job->err = errno;
      break;
    }
    // POLLERR / POLLHUP: the next sendfile reports the error.
  }
  napi_call_threadsafe_function(job->done, job, napi_tsfn_blocking);
  napi_release_threadsafe_function(job->done, napi_tsfn_release);
  return NULL;
}

// Main thread, once the thread has ended: callback(error or null, bytes sent). env is NULL when
// node is tearing the environment down; then only the fds are closed.
static void file_send_call_js(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  struct file_send *job = data;
  file_send_end(job);
  if (env == NULL) return;
  napi_value args[2], global;
  if (job->err != 0) {
    char what[64];
    snprintf(what, sizeof what, "socket fd %d", job->caller_socket_fd);
    args[0] = errno_error(env, job->err, "sendfile", what);
  } else {
    napi_get_null(env, &args[0]);
  }
  napi_create_double(env, (double)job->sent, &args[1]);
  napi_get_global(env, &global);
  napi_call_function(env, global, callback, 2, args, NULL);
}

// The threadsafe function is gone (after the call above, or without it at teardown).
static void file_send_thread_gone(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  struct file_send *job = data;
  file_send_end(job);
  file_send_unref(job);
}

static void file_send_handle_gone(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  file_send_unref(data);
}

static napi_value send_file(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t socket_fd = -1, file_fd = -1, timeout_ms = 0;
  int64_t offset = -1, length = 0;
  napi_valuetype type = napi_undefined;
  if (argc < 6 || napi_get_value_int32(env, argv[0], &socket_fd) != napi_ok || socket_fd < 0 ||
      napi_get_value_int32(env, argv[1], &file_fd) != napi_ok || file_fd < 0 ||
      napi_get_value_int64(env, argv[2], &offset) != napi_ok || offset < 0 ||
      napi_get_value_int64(env, argv[3], &length) != napi_ok || length < 1 ||
      napi_get_value_int32(env, argv[4], &timeout_ms) != napi_ok || timeout_ms < 1 ||
      napi_typeof(env, argv[5], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL,
                          "sendFile(socketFd, fileFd, offset, length, idleTimeoutMs, callback): two fds, "
                          "an offset >= 0, a length >= 1, a timeout >= 1 ms and a function");
    return NULL;
  }
  napi_value result;
  if (atomic_fetch_add(&send_threads, 1) >= SEND_MAX_THREADS) {
    atomic_fetch_sub(&send_threads, 1);
    napi_get_null(env, &result);
    return result;
  }
  char what[64];
  snprintf(what, sizeof what, "socket fd %d", socket_fd);
  struct file_send *job = calloc(1, sizeof *job);
  if (job == NULL) {
    atomic_fetch_sub(&send_threads, 1);
    return throw_errno(env, ENOMEM, "sendfile", what);
  }
  job->socket_fd = fcntl(socket_fd, F_DUPFD_CLOEXEC, 3);
  job->file_fd = job->socket_fd < 0 ? -1 : fcntl(file_fd, F_DUPFD_CLOEXEC, 3);
  if (job->file_fd < 0) {
    int err = errno;
    if (job->socket_fd >= 0) close(job->socket_fd);
    free(job);
    atomic_fetch_sub(&send_threads, 1);
    return throw_errno(env, err, "dup", what);
  }
  job->caller_socket_fd = socket_fd;
  job->offset = offset;
  job->length = length;
  job->timeout_ms = timeout_ms;
  // The threadsafe function's own reference; the JS handle takes the second below.
  job->refs = 1;
  napi_value name;
  napi_create_string_utf8(env, "berth.sendFile", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[5], NULL, name, 0, 1, job, file_send_thread_gone, NULL,
                                      file_send_call_js, &job->done) != napi_ok) {
    job->refs = 0;
    file_send_end(job);
    free(job);
    return throw_errno(env, EAGAIN, "sendfile", what);
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  // The thread takes no signals: node's handlers run on its own threads.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_t thread;
  int err = pthread_create(&thread, &attr, file_send_thread, job);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    // No call will come: the threadsafe function's finalizer closes the fds and frees the job.
    napi_release_threadsafe_function(job->done, napi_tsfn_abort);
    return throw_errno(env, err, "pthread_create", what);
  }
  job->refs++;
  napi_create_external(env, job, file_send_handle_gone, NULL, &result);
  return result;
}

// Ends a send early from the main thread (the response was closed under it): a shutdown(2) of the
// socket, which the sending thread sees as EPIPE at once, even while it waits for room.
static napi_value send_file_cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data = NULL;
  napi_valuetype type = napi_undefined;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_external ||
      napi_get_value_external(env, argv[0], &data) != napi_ok) {
    napi_throw_type_error(env, NULL, "sendFileCancel(send): a handle sendFile returned");
    return NULL;
  }
  struct file_send *job = data;
  if (!job->ended) shutdown(job->socket_fd, SHUT_RDWR);
  return NULL;
}

static void export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

static napi_value init(napi_env env, napi_value exports) {
  export_function(env, exports, "openConfinedDir", open_confined_dir);
  export_function(env, exports, "flock", flock_now);
  export_function(env, exports, "flockWait", flock_wait);
  export_function(env, exports, "createNetns", create_netns);
  export_function(env, exports, "deleteNetns", delete_netns);
  export_function(env, exports, "spawnProcess", spawn_process);
  export_function(env, exports, "watchExit", watch_exit);
  export_function(env, exports, "pipe", make_pipe);
  export_function(env, exports, "socketpair", make_socketpair);
  export_function(env, exports, "sendFds", send_fds);
  export_function(env, exports, "recvFds", recv_fds);
  export_function(env, exports, "dupTo", dup_to);
  export_function(env, exports, "randomBytes", random_bytes);
  export_function(env, exports, "getxattr", get_xattr);
  export_function(env, exports, "sendFile", send_file);
  export_function(env, exports, "sendFileCancel", send_file_cancel);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

// berth's native addon: the few Linux system calls Node.js has no binding for.
//
// flock(fd, operation) and flockWait(fd, operation, callback) are flock(2) itself, the whole of
// a pod's process-bound state: a try (LOCK_NB) or an unlock at once, a blocking wait on a thread
// of libuv's pool, so `status --wait` sleeps in the kernel instead of polling.
//
// createNetns(dir, name) / deleteNetns(path) make and remove a named network namespace as
// `ip netns add|del` do (a bind mount of the namespace on a file in a shared-propagation dir), in
// this process rather than in two spawned ones per pod; the new namespace is made by a short-lived
// thread, so node's own threads never leave the host's.
//
// openConfinedDir(path) opens a directory through a private, detached, read-only copy of its
// mount (open_tree(2) with OPEN_TREE_CLONE, then mount_setattr(2)). The pod's lock fd is opened
// this way because it is passed into the container (runc --preserve-fds): on a detached mount
// ".." stops at the directory itself and nothing can be written through it, so the container
// holds its pod's lock without a way out to the host's filesystem through that fd.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The system call numbers are the same on every architecture since Linux 5.1 (424 and up).
#ifndef SYS_open_tree
#define SYS_open_tree 428
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

// Runs on a thread of its own: unshare(CLONE_NEWNET) moves only the calling thread, and the bind
// mount keeps the namespace alive once the thread has ended.
static void *netns_thread(void *arg) {
  struct netns_job *job = arg;
  if (unshare(CLONE_NEWNET) < 0) {
    job->err = errno;
    job->step = "unshare";
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
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

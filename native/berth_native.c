// berth's native addon: the few Linux system calls Node.js has no binding for.
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
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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
    default: return "EUNKNOWN";
  }
}

// Throws an Error whose code is the errno's name (as Node's fs errors have) and whose message
// names the step and the path.
static napi_value throw_errno(napi_env env, int err, const char *step, const char *path) {
  char message[4200];
  snprintf(message, sizeof message, "%s: %s, %s '%s'", errno_code(err), strerror(err), step, path);
  napi_value code, msg, error;
  napi_create_string_utf8(env, errno_code(err), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_value errno_value;
  napi_create_int32(env, -err, &errno_value);
  napi_set_named_property(env, error, "errno", errno_value);
  napi_throw(env, error);
  return NULL;
}

static napi_value open_confined_dir(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char path[4097];
  size_t length = 0;
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], path, sizeof path, &length) != napi_ok ||
      length == 0 || length >= sizeof path - 1) {
    napi_throw_type_error(env, NULL, "openConfinedDir(path): path must be a non-empty string");
    return NULL;
  }
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

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "openConfinedDir", NAPI_AUTO_LENGTH, open_confined_dir, NULL, &fn);
  napi_set_named_property(env, exports, "openConfinedDir", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

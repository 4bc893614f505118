// Defines path resolution in another process's view of the filesystem, for
// the seccomp supervisor: a path a traced process passed to statfs or open is
// looked up from that process's root and working directory (or a directory
// fd of its), which the supervisor holds as O_PATH fds opened through
// /proc/PID/root, /proc/PID/cwd and /proc/PID/fd/N. The walk goes one
// component at a time with O_NOFOLLOW, so that `..` stops at the process's
// root and an absolute symlink restarts there, as the kernel does for that
// process. Two things in procfs depend on who looks: `self` and
// `thread-self` at the root of a procfs are replaced by the traced process's
// own ids, and the per-process magic links (fd/N, cwd, root, exe, ...) are
// followed by the kernel itself.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::sandbox {

// Owns one file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// The traced process as the walk needs it.
struct ProcessView {
  int root_fd = -1;  // its root directory (O_PATH)
  // Its thread group and thread ids as its own /proc shows them (the
  // innermost pid namespace), for `self` and `thread-self`.
  pid_t tgid = 0;
  pid_t tid = 0;
};

struct ResolveOptions {
  bool follow_last = true;     // follow a symlink in the last component
  bool no_symlinks = false;    // openat2 RESOLVE_NO_SYMLINKS: fail on any symlink
  bool no_magiclinks = false;  // openat2 RESOLVE_NO_MAGICLINKS
  bool root_is_start = false;  // openat2 RESOLVE_IN_ROOT / RESOLVE_BENEATH
};

struct Resolved {
  UniqueFd fd;         // the object (O_PATH)
  UniqueFd parent_fd;  // the directory it was found in (O_PATH)
  std::string name;    // the last component's name, after symlinks
};

// Resolves `path` for the process `view`: an absolute path from its root, a
// relative one from `start_fd` (its cwd or the directory fd it passed).
// Errors carry the errno the lookup stopped with; they only mean "not
// something the supervisor answers for".
Result<Resolved> resolve_in_view(const ProcessView& view, int start_fd, std::string_view path,
                                 const ResolveOptions& opts);

// The procfs super magic and the inode number of a procfs root.
constexpr long kProcSuperMagic = 0x9fa0;

// True if `fd` is the root directory of a procfs instance.
bool is_procfs_root(int fd);

}  // namespace resctrlfs::sandbox

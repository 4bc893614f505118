// Defines PrivateDir: a directory the daemon keeps files in (the state
// journal and instance lock of --state-dir, the default lock directory, the
// boot-state files of --boot-state-dir), opened once and checked so that no
// other user can have put anything in it.
//
// The daemon runs as root and writes, truncates, renames and unlinks files
// in these directories. A directory another user owns or may write to would
// let that user plant a symlink at one of their names (root would then
// truncate whatever it points at) or hand the daemon a crafted journal. So:
// the directory must belong to the daemon's effective uid and be writable by
// nobody else; it is opened without following a symlink at its own name;
// every file in it is then reached relative to that descriptor (openat,
// renameat, unlinkat), with O_NOFOLLOW, so that renaming or replacing the
// path after the check changes nothing.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::daemon {

class PrivateDir {
 public:
  // Opens `path` (O_DIRECTORY|O_NOFOLLOW). With `create`, missing parents are
  // made (mkdir -p, 0755 less the umask) and the directory itself with mode
  // 0700, whatever the umask. `what` names the directory in messages
  // ("--state-dir"). Refused with EPERM and a message saying what to do when
  // `path` is a symbolic link, is owned by a uid other than the effective
  // one, or lets group or others write to it; ENOTDIR when it is not a
  // directory; ENOENT when it does not exist (and `create` is false). Nothing
  // is created in it here.
  static Result<PrivateDir> open(const std::string& path, std::string_view what, bool create);

  PrivateDir(PrivateDir&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  PrivateDir& operator=(PrivateDir&& o) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // `path`/`name`, for messages only: files are reached through fd().
  std::string file(std::string_view name) const;
  // Gives up the descriptor (the caller closes it).
  int release();

 private:
  PrivateDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace resctrlfs::daemon

// Defines the process-level steps of starting resctrlfsd that are not FUSE:
// the per-mount-point instance lock, the start-up pipe that lets a
// detaching daemon report success or failure to the shell that started it,
// and the systemd readiness notification.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::daemon {

// The lock file name for a mount point: its absolute path with '/' as '-'
// and anything unusual escaped as %XX ("/sys/fs/resctrl" -> "sys-fs-resctrl.lock"),
// after "NS_KEY." when a namespace key is given ("mnt-4026531841.sys-fs-resctrl.lock").
std::string lock_file_name(std::string_view abs_mountpoint, std::string_view ns_key = {});

// The mount namespace this process is in. Instances of resctrlfsd are per
// (mount namespace, mount point), like mounts: daemons in two namespaces
// (two sandboxes, two containers) serve the same path without meeting.
struct MountNamespace {
  uint64_t inode = 0;         // of /proc/self/ns/mnt
  long oldest_pid = 0;        // the namespace's oldest visible process
  uint64_t oldest_start = 0;  // its start time (clock ticks after boot)
  // "mnt-<inode>", for the lock: its holder keeps the namespace alive, so a
  // later namespace that gets the same inode number finds the lock free.
  std::string key() const;
  // "mnt-<inode>-<pid>-<start>", for what outlives the daemon (boot state):
  // the kernel reuses a dead namespace's inode number, but the new
  // namespace's oldest process is another one. A namespace whose oldest
  // process exits while others live on is taken for a new one.
  std::string identity() const;
};

// Reads /proc/self/ns/mnt and finds the oldest process (smallest start time,
// then smallest pid) whose ns/mnt is the same, under `proc_root`. Processes
// whose namespace cannot be read (another user's, gone) are passed over.
Result<MountNamespace> current_mount_namespace(const std::string& proc_root = "/proc");

// An flock(2)-held lock file; released, and the file removed, when the
// object goes away.
class InstanceLock {
 public:
  // Locks `dir`/lock_file_name(mountpoint, ns_key), creating `dir` (0700)
  // if needed. `dir` must be a PrivateDir (private_dir.h: owned by this uid,
  // writable by nobody else, not a symlink; EPERM otherwise) and the lock
  // file is opened in it without following a symlink. While another instance holds it and resctrl
  // is not mounted at the mount point (in this namespace), that instance is exiting (or still
  // starting): waits for it, up to `wait`. EBUSY with the holder's pid in
  // the message when it serves the mount point or does not let go in time.
  static Result<InstanceLock> acquire(const std::string& dir, const std::string& abs_mountpoint,
                                      const std::string& ns_key = {},
                                      std::chrono::milliseconds wait = {});
  InstanceLock(InstanceLock&& o) noexcept
      : fd_(o.fd_), dir_fd_(o.dir_fd_), name_(std::move(o.name_)), path_(std::move(o.path_)) {
    o.fd_ = -1;
    o.dir_fd_ = -1;
  }
  InstanceLock& operator=(InstanceLock&&) = delete;
  ~InstanceLock();
  const std::string& path() const { return path_; }

 private:
  InstanceLock(int fd, int dir_fd, std::string name, std::string path)
      : fd_(fd), dir_fd_(dir_fd), name_(std::move(name)), path_(std::move(path)) {}
  int fd_ = -1;
  int dir_fd_ = -1;   // the lock's directory: the file is removed relative to it
  std::string name_;  // the file's name in it
  std::string path_;  // for messages
};

// True when /proc/mounts (its text) lists a resctrl file system, ours
// (fuse.resctrl) or the kernel's, mounted at `abs_path`.
bool resctrl_mounted_at(std::string_view proc_mounts, std::string_view abs_path);

// Reads a whole small file (/proc text); empty on failure.
std::string read_text_file(const std::string& path);

// Makes `mountpoint` absolute and checks it is a directory. A mount point
// left dead by a crashed daemon ("Transport endpoint is not connected") is
// detached first; one where resctrl is mounted and alive is EBUSY (resctrl
// mounts once, like the kernel's).
Result<std::string> prepare_mountpoint(const std::string& mountpoint);

// The start-up pipe: without -f the process forks at once; the parent waits
// until the child reports "mounted" (exit 0) or an error (printed, exit 1).
class StartupPipe {
 public:
  // Forks. Returns in the child (which goes on starting); the parent never
  // returns from here.
  static StartupPipe detach();
  // Foreground: no pipe, reporting is a no-op.
  StartupPipe() = default;

  // Child side: mount is ready; also detaches stdio (stdin and stdout to
  // /dev/null, and stderr too unless `keep_stderr`: the log still goes
  // there) and the session.
  void report_ready(bool keep_stderr = false);
  void report_error(const std::string& message);

 private:
  explicit StartupPipe(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Whether a syslog daemon listens at `path` (glibc's syslog(3) writes to
// /dev/log; without a listener its messages are dropped).
bool syslog_listens(const char* path = "/dev/log");

// Whether a detached daemon may keep fd 2 for its log: not when it is a pipe
// or socket, whose reader waits for the end of it.
bool stderr_is_kept_open_safely();

// Sends `msg` (and `fd` with SCM_RIGHTS when >= 0) to systemd's notify
// socket at `path` ("@name": the abstract namespace); false when `path` is
// null or empty or the message was not sent whole.
bool send_systemd_notification(const char* path, std::string_view msg, int fd = -1);

// sd_notify(READY=1) when started by systemd with Type=notify.
void notify_systemd_ready();

}  // namespace resctrlfs::daemon

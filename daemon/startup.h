// Defines the process-level steps of starting resctrlfsd that are not FUSE:
// the per-mount-point instance lock, the preconditions of the MSR backend,
// the start-up pipe that lets a detaching daemon report success or failure
// to the shell that started it, and the systemd readiness notification.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::daemon {

// The lock file name for a mount point: its absolute path with '/' as '-'
// and anything unusual escaped as %XX ("/sys/fs/resctrl" -> "sys-fs-resctrl.lock").
std::string lock_file_name(std::string_view abs_mountpoint);

// An flock(2)-held lock file; released when the object (and every process
// that inherited the descriptor) goes away.
class InstanceLock {
 public:
  // Locks `dir`/lock_file_name(mountpoint), creating `dir` if needed. EBUSY
  // with the holder's pid in the message when another instance holds it.
  static Result<InstanceLock> acquire(const std::string& dir, const std::string& abs_mountpoint);
  InstanceLock(InstanceLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  InstanceLock& operator=(InstanceLock&&) = delete;
  ~InstanceLock();
  const std::string& path() const { return path_; }

 private:
  InstanceLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// The MSR backend must not run next to a kernel resctrl (both would program
// the same registers) nor on a CPU without RDT/PQoS. Takes the text of
// /proc/mounts and /proc/cpuinfo.
Result<void> check_msr_preconditions(std::string_view proc_mounts, std::string_view cpuinfo);

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

  // Child side: mount is ready; also detaches stdio and the session.
  void report_ready();
  void report_error(const std::string& message);

 private:
  explicit StartupPipe(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// sd_notify(READY=1) when started by systemd with Type=notify.
void notify_systemd_ready();

}  // namespace resctrlfs::daemon

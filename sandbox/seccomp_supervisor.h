// Defines the sandbox's seccomp user-notification supervisor. COMMAND
// installs, just before exec, a filter that sends statfs, fstatfs and
// read-only opens (open, openat, openat2) to a listener; the filter is
// inherited by every descendant, so daemons COMMAND starts and the processes
// they start are covered too. The listener goes to the sandbox process,
// where the Supervisor answers:
//  - statfs/fstatfs of anything on the resctrlfs mount (recognised by its
//    device) with the struct statfs the kernel's resctrl gives: type
//    RDTGROUP_SUPER_MAGIC and the rest as kernfs fills it in;
//  - opens of /proc/{self,thread-self,PID,PID/task/TID}/{mounts,mountinfo}
//    and /proc/mounts with an injected fd (SECCOMP_IOCTL_NOTIF_ADDFD) of a
//    sealed memfd holding that process's real table with the resctrlfs
//    mount shown as the kernel's resctrl;
//  - mount(2) of type resctrl and umount2(2) of such a mount, in the
//    supervisor's mount namespace, by starting or stopping a daemon
//    (ResctrlMounts) with the kernel's errors; fsopen("resctrl") with
//    ENODEV;
//  - everything else by letting the kernel carry on
//    (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
// Paths are resolved in the caller's view (path_resolve.h), and every answer
// is given only after the notification id has been re-validated following
// the last read of the caller's memory or /proc entries.
#pragma once

#include <sys/statfs.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/vcpus.h"

namespace resctrlfs::sandbox {

// RDTGROUP_SUPER_MAGIC, the f_type of a resctrl mount.
constexpr long kResctrlSuperMagic = 0x7655821;

enum class Intercept {
  kAll,         // statfs family and mount-table opens
  kStatfsOnly,  // statfs family only (opens run at full speed)
  kNone,        // no filter: the old per-COMMAND tables only
};

// With virtual CPUs (--cpus platform) the filter also sends
// sched_setaffinity, sched_getaffinity and getcpu, which the supervisor
// answers in the platform's CPU numbers (base/vcpus.h): a set pins the
// thread to the mapped host CPUs and is recorded (and the table written to
// SupervisorConfig::vcpu_file for the daemons), a get returns the recorded
// (or inherited) virtual mask in a mask of the platform's size, getcpu the
// virtual CPU the thread counts as running on. Calls naming a thread by id
// from another pid namespace than the supervisor's go to the kernel.

// Parses --intercept's value: all, statfs-only, none.
Result<Intercept> parse_intercept(std::string_view value);

// What the kernel's resctrl answers to statfs: kernfs's simple statfs (type,
// page-size blocks, NAME_MAX, an fsid made of the device number, every count
// 0) with `mount_flags` (the ST_* flags of the mount the path is on).
struct statfs resctrl_statfs(dev_t device, long mount_flags);

// In COMMAND's process before exec: installs the filter for `mode` (not
// kNone) and returns the listener fd. Refused (EBUSY) by kernels when the
// process already has a filter with a listener.
Result<int> install_notify_filter(Intercept mode, bool virtual_cpus = false);

// Passing the listener from COMMAND to the sandbox over a unix socket.
Result<void> send_fd(int sock, int fd);
Result<int> receive_fd(int sock);

// A resctrlfs mount the supervisor shows as the kernel's resctrl.
struct ResctrlMount {
  dev_t device = 0;                  // st_dev of the mount
  uint64_t mnt_id = 0;               // its mount id (statx STATX_MNT_ID)
  ino_t root_ino = 0;                // its root directory's inode number
  std::vector<std::string> options;  // cdp, cdpl2, mba_MBps, debug as mounted
};

// Whoever starts and stops the daemons (the sandbox, sandbox/daemons.h):
// what the supervisor asks when a process mounts or unmounts resctrl.
class ResctrlMounts {
 public:
  virtual ~ResctrlMounts() = default;
  // Every mount made so far and not unmounted.
  virtual std::vector<ResctrlMount> mounts() const = 0;
  // mount(2) of type resctrl on `mountpoint` (absolute, in the supervisor's
  // view) with the kernel's `options`; returns once the tree is ready.
  virtual Result<void> mount(const std::string& mountpoint,
                             const std::vector<std::string>& options) = 0;
  // umount2(2) of mount `mnt_id` (one of mounts()) with `flags` (MNT_FORCE,
  // MNT_DETACH); returns once its daemon has gone.
  virtual Result<void> unmount(uint64_t mnt_id, int flags) = 0;
};

struct SupervisorConfig {
  // Without `mounts`: the one resctrlfs mount (tests).
  dev_t device = 0;                       // st_dev of the resctrlfs mount
  std::vector<std::string> resctrl_opts;  // cdp, cdpl2, mba_MBps, debug as mounted
  Intercept mode = Intercept::kAll;
  // With it: every mount it lists, and mount(2)/umount2(2) of resctrl in
  // the supervisor's mount namespace handed to it.
  std::shared_ptr<ResctrlMounts> mounts;
  // Virtual CPUs (enabled() when --cpus platform; the filter must have been
  // installed with virtual_cpus).
  VcpuMap vcpus;
  std::string vcpu_file;        // where the table goes ("" = nowhere)
  std::vector<int> vcpu_nodes;  // NUMA node per virtual CPU, for getcpu
};

// Serves one listener on a thread of its own; slow answers (those that walk
// paths or read tables) run on a pool of worker threads, so that one lookup
// blocked in some FUSE server cannot hold up the others.
class Supervisor {
 public:
  // Takes ownership of `listener`.
  static Result<std::unique_ptr<Supervisor>> start(int listener, SupervisorConfig config);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  struct Impl;

 private:
  explicit Supervisor(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace resctrlfs::sandbox

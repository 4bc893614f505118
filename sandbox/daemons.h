// Defines the set of resctrlfsd instances a sandbox runs in its mount
// namespace: the first one, on /sys/fs/resctrl, started by the sandbox
// before COMMAND, and those the seccomp supervisor starts and stops when a
// process inside mounts or unmounts resctrl (the kernel's resctrl can be
// mounted once at a time, so there is at most one, plus any still exiting).
// Every daemon gets the same arguments (the sandbox's daemon options) but
// its own mount point and resctrl mount options, and the same boot-state
// directory, so that what the kernel keeps from one mount to the next
// (RMID order and limbo, max_threshold_occupancy, counter settings) carries
// over as it does on a kernel.
//
// Thread-safe: the supervisor's workers mount and unmount while the
// sandbox's main thread reaps exited daemons.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/seccomp_supervisor.h"

namespace resctrlfs::sandbox {

class Daemons : public ResctrlMounts {
 public:
  // `daemon`: the resctrlfsd binary; `args`: its options other than -f, the
  // resctrl mount options and the mount point (FUSE options and ours given
  // with -o are kept in them); `boot_state_dir`: passed to every daemon
  // with --boot-state-dir ("" passes none: `args` has one).
  Daemons(std::string daemon, std::vector<std::string> args, std::string boot_state_dir);
  ~Daemons() override;

  // Starts a daemon on `mountpoint` (an existing directory, absolute, in
  // this process's view) with resctrl options `options`, and returns once
  // it has mounted there. `interrupted` is called while waiting; an error
  // from it stops the wait (the daemon is stopped). EBUSY while another
  // daemon of the set is mounted or starting; EINVAL when the daemon exits
  // before mounting (the options this platform refuses: its message is on
  // stderr).
  Result<void> start(const std::string& mountpoint, const std::vector<std::string>& options,
                     const std::function<Result<void>()>& interrupted);

  // ResctrlMounts, for the supervisor.
  std::vector<ResctrlMount> mounts() const override;
  Result<void> mount(const std::string& mountpoint,
                     const std::vector<std::string>& options) override;
  Result<void> unmount(uint64_t mnt_id, int flags) override;

  // The pid of the daemon mounted (or starting) now, 0 if none.
  pid_t current_pid() const;

  // Reaps daemons that exited on their own (not through unmount() or
  // stop_all()); returns a line for each saying so.
  std::vector<std::string> reap();

  // Stops every daemon (SIGTERM, then SIGKILL to its process group) and
  // refuses further starts; returns their mount points.
  std::vector<std::string> stop_all();

 private:
  struct Entry;
  Result<void> wait_mounted(Entry& e, const std::function<Result<void>()>& interrupted);
  void terminate(Entry& e);
  void forget(pid_t pid);

  const std::string daemon_;
  const std::vector<std::string> args_;
  const std::string boot_state_dir_;
  const pid_t self_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Entry>> entries_;
  bool closed_ = false;
};

}  // namespace resctrlfs::sandbox

// Defines FsImpl, the resctrl model behind fs::Filesystem: it owns the
// shared state (Model) and the parts that work on it (fs/parts.h), takes
// the lock on every entry point and calls into the parts. The entry points
// are implemented next to the part they mostly drive (tree.cc, groups.cc,
// membership.cc, monitor.cc, hotplug.cc, state.cc, state_restore.cc,
// boot_state.cc). Internal to fs/.
//
// Locking: every public entry point takes mu_ (the rdtgroup_mutex analogue)
// and calls only the unlocked parts; the parts assume mu_ is held.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fs/filesystem.h"
#include "fs/io_channels.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

class FsImpl final : public Filesystem {
 public:
  explicit FsImpl(const FilesystemConfig& cfg);
  ~FsImpl() override;

  Result<void> mount(const MountOptions& opts) override;
  void unmount() override;
  Result<Attr> lookup(Ino parent, std::string_view name) override;
  Result<Attr> getattr(Ino ino) override;
  Result<std::vector<DirEntry>> readdir(Ino ino) override;
  Result<Attr> setattr(Ino ino, const uint32_t* mode, const uid_t* uid, const gid_t* gid) override;
  Result<OpenFile> open(Ino ino, int flags, const Caller& caller) override;
  Result<std::string> render(Ino ino, const Caller& caller) override;
  Result<size_t> write(Ino ino, std::string_view data, const Caller& caller) override;
  Result<Attr> create(Ino parent, std::string_view name) override;
  Result<void> unlink(Ino parent, std::string_view name) override;
  Result<Attr> mkdir(Ino parent, std::string_view name, uint32_t mode,
                     const Caller& caller) override;
  Result<void> rmdir(Ino parent, std::string_view name) override;
  Result<void> rename(Ino parent, std::string_view name, Ino newparent, std::string_view newname,
                      unsigned flags) override;
  void forget(Ino ino, uint64_t nlookup) override;
  void tick(std::chrono::steady_clock::time_point now) override;
  void on_fork(pid_t parent_tid, pid_t child_tid) override;
  void on_exit(pid_t tid) override;
  void on_thread_fork(pid_t parent_tid, pid_t child_tid, pid_t child_tgid) override;
  void on_exec(pid_t tgid) override;
  void track_threads(bool on) override;
  void rescan_threads() override;
  std::string status_json() override;
  Result<void> cpu_offline(unsigned cpu) override;
  Result<void> cpu_online(unsigned cpu) override;
  std::string save_state_json() override;
  std::string take_state_snapshot_json() override;
  std::optional<std::string> take_state_delta_json() override;
  Result<void> restore_state_json(const std::string& json) override;
  std::string save_boot_state_json() override;
  Result<void> restore_boot_state_json(const std::string& json) override;

 private:
  // restore_boot_state_json() under mu_, without its last-guard try.
  Result<void> restore_boot_state_locked(const std::string& text);

  std::mutex mu_;
  Model m_;
  Parts p_;
  Tree tree_;
  Groups groups_;
  CpuOwners cpus_;
  CtrlFiles ctrl_;
  InfoFiles info_files_;
  Monitor mon_;
  IoAlloc io_alloc_;
  PseudoLock plock_;
  IoChannels io_ch_;
};

}  // namespace resctrlfs::fs::internal

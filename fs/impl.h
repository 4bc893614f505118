// Defines FsImpl, the resctrl model behind fs::Filesystem: it owns the
// shared state (Model) and the parts that work on it (fs/parts.h), takes
// the lock on every entry point and calls into the parts. The entry points
// are implemented next to the part they mostly drive (tree.cc, groups.cc,
// membership.cc, monitor.cc, hotplug.cc, state.cc, state_restore.cc,
// boot_state.cc). Internal to fs/.
//
// Locking: two locks, taken in this order (then hw/'s own, then the
// daemon's invalidation queue, both leaves):
//   1. cmd_mu_, the command lock (the rdtgroup_mutex analogue): held for a
//      whole command by every entry point that may program or read the
//      hardware — write, mkdir, rmdir, rename, setattr, mount, unmount,
//      tick (limbo, overflow, mba_sc), the hotplug up-calls, the state and
//      boot-state restores, and reads of event files (render) — through
//      CommandLock. Commands therefore run one at a time.
//   2. mu_, the model lock: guards Model and the parts. Commands hold it
//      too, except while hw/ waits on something slow outside the process
//      (a broker round trip, marked by a BlockingSection in hw/): the
//      CommandLock is the thread's BlockingHook and lets go of mu_ for that
//      wait. Entry points that need no register take mu_ alone: lookup,
//      getattr, readdir, open, forget, render of every other file, the fork
//      and exit events, status and the state documents.
// So a reader never waits for a broker round trip, and what it sees during
// one is the model as the command left it before calling hw/: commands
// validate, program the hardware, then commit the model (the controls'
// values live in hw/'s shadow, which changes only on success), so a reader
// sees the old configuration until the command is done. While mu_ is let
// go, the command's thread touches nothing but hw/'s transport, and readers
// never reach the transport (the hardware-reading renders take cmd_mu_), so
// hw/'s other state is shared by readers and the command under mu_ only.
// A node a forget would free while a command runs is freed when the command
// ends (the command may still point at it).
//
// The parts assume mu_ is held (and cmd_mu_ for anything that changes the
// hardware); where a part relies on it, it says so with RESCTRLFS_ASSERT_HELD
// on Model::model_mu / Model::cmd_mu (fs/lock_assert.h), checked in builds
// with lock assertions.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/blocking.h"
#include "fs/filesystem.h"
#include "fs/io_channels.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

// What the root's helpers hold (HotplugEvents, StateWriter, StateRestore):
// they orchestrate every part, so they see the model and all the parts.
class RootHelper {
 public:
  RootHelper(Model& m, Parts& p) : m_(m), p_(p) {}

 protected:
  Model& m_;
  Parts& p_;
};

// The answer to the tree's RowConditions: a row's condition through the
// file table's dispatch.
class RowDispatch final : public RowConditions {
 public:
  explicit RowDispatch(Parts& p) : p_(p) {}
  bool holds(const FileRow& row) override { return row.cond == nullptr || row.cond(p_); }

 private:
  Parts& p_;
};

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
  Result<std::shared_ptr<const std::string>> render_shared(Ino ino, const Caller& caller) override;
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
  void on_thread_exit(pid_t tid, pid_t tgid) override;
  void on_thread_fork(pid_t parent_tid, pid_t child_tid, pid_t child_tgid) override;
  void on_exec(pid_t tgid) override;
  void track_threads(bool on) override;
  void rescan_threads() override;
  std::string status_json() override;
  std::vector<std::string> take_hw_write_failures() override;
  Result<void> cpu_offline(unsigned cpu) override;
  Result<void> cpu_online(unsigned cpu) override;
  std::string save_state_json() override;
  std::string take_state_snapshot_json() override;
  std::optional<std::string> take_state_delta_json() override;
  Result<void> restore_state_json(const std::string& json) override;
  void set_command_status(std::string_view text) override;
  std::string save_boot_state_json() override;
  Result<void> restore_boot_state_json(const std::string& json) override;

 private:
  class CommandLock;

  // restore_boot_state_json() under mu_, without its last-guard try.
  Result<void> restore_boot_state_locked(const std::string& text);
  // render() and render_shared(): `show` runs on node `ino` under mu_, and
  // for an event file (which reads counters) under the command lock too,
  // after the command running; ENOENT, ENODEV, EISDIR as render().
  template <class F>
  auto read_node(Ino ino, F&& show) -> decltype(show(std::declval<Node&>()));
  // The caller's view of thread ids when `ino` is a tasks file and the
  // caller is in another pid namespace than the daemon's; null otherwise.
  // Takes mu_ briefly; call it before any lock.
  std::unique_ptr<PidView> task_view(Ino ino, const Caller& caller);
  // Under mu_, at the end of a command: frees the nodes forget() left.
  void release_deferred();
  // What render() and render_shared() return for node `n`: the file table
  // routes a file to its part's handler, an event file to the Monitor's.
  // Event files and the rows that say so clear last_cmd_status on read, and
  // a failed read leaves its text there.
  Result<std::string> render_node(const Node& n);
  // render_node as a shared buffer: a row's cached text without a copy.
  Result<std::shared_ptr<const std::string>> render_node_shared(const Node& n);

  OwnedMutex cmd_mu_;                  // the command lock (see Locking above)
  OwnedMutex mu_;                      // the model lock
  bool command_running_ = false;       // under mu_: a CommandLock is held
  std::vector<Ino> deferred_release_;  // under mu_
  // save_boot_state_json()'s "rmids" text and what it was made from (the
  // pool, whether mounted and the groups' RMIDs, as numbers), under mu_:
  // the tick after any command asks for the document, and its RMID lists
  // are the part that grows with the machine (thousands of numbers to
  // merge and print) while most commands do not change them.
  std::vector<uint32_t> boot_rmids_key_;
  std::string boot_rmids_text_;
  Model m_;
  Parts p_;
  RowDispatch rows_;
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

// Held by a command for its whole run: cmd_mu_, and mu_ except while hw/
// waits in a BlockingSection on this thread.
class FsImpl::CommandLock final : public BlockingHook {
 public:
  explicit CommandLock(FsImpl& fs) : fs_(fs), cmd_(fs.cmd_mu_), model_(fs.mu_), hook_(this) {
    fs_.command_running_ = true;
  }
  ~CommandLock() {
    fs_.command_running_ = false;
    fs_.release_deferred();
  }
  CommandLock(const CommandLock&) = delete;
  CommandLock& operator=(const CommandLock&) = delete;
  void release() override { model_.unlock(); }
  void reacquire() override { model_.lock(); }

 private:
  FsImpl& fs_;
  std::lock_guard<OwnedMutex> cmd_;
  std::unique_lock<OwnedMutex> model_;
  ScopedBlockingHook hook_;  // destroyed first: no release after the end
};

}  // namespace resctrlfs::fs::internal

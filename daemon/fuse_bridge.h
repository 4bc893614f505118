// Defines FuseBridge: the libfuse3 low-level session serving an
// fs::Filesystem. It is driven by the daemon's event loop (process_one()
// when the session fd is readable), never by a libfuse loop. Requests are
// read and dispatched one at a time on the loop's thread; commands (write,
// mkdir, rmdir, rename, setattr, and reads of files that read registers)
// are handed to the command runner (set_command_runner), which replies
// from its thread, so a command waiting on a slow broker leaves the loop
// free to answer everything else. A client's next request comes after the
// reply to its last, so a write followed by a read of the same file sees
// the write. fuse_bridge.cc is the only file of the project that includes
// fuse_lowlevel.h.
//
// What the session promises (the libfuse settings bench/README.md measures):
//   - mount options fsname=resctrl, subtype=resctrl, default_permissions,
//     allow_other (plus the user's FUSE options);
//   - every file opened direct_io (no keep_cache, seekable); as with the
//     kernel's seq_file, its content is generated at the first read(2) of
//     the fd (never at open) and again at every read at offset 0, and a
//     read past offset 0 continues the last rendering; a file of a removed
//     group reads ENODEV;
//   - entry/attr timeouts of an hour; directory listings cached by the
//     kernel (zero-message opendir when the kernel supports it);
//   - no flush handler, no writeback cache, atomic_o_trunc kept, so
//     `echo > file` costs OPEN + WRITE (+ RELEASE);
//   - each WRITE request is one command; more than 4096 bytes is E2BIG;
//   - flock is left to the kernel's local lock implementation (a single
//     mount has a single set of lockers, so it is exact).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "daemon/invalidation_queue.h"
#include "daemon/request_stats.h"
#include "fs/filesystem.h"

namespace resctrlfs::daemon {

struct FuseSettings {
  std::string mountpoint;
  std::vector<std::string> fuse_options;  // user -o options for libfuse
  double entry_timeout_s = 3600;
  double attr_timeout_s = 3600;
};

class FuseBridge {
 public:
  // Creates the session (not mounted yet). Fails with EINVAL when libfuse
  // rejects an option.
  static Result<std::unique_ptr<FuseBridge>> create(fs::Filesystem& fs, RequestStats& stats,
                                                    const FuseSettings& settings);
  ~FuseBridge();
  FuseBridge(const FuseBridge&) = delete;
  FuseBridge& operator=(const FuseBridge&) = delete;

  Result<void> mount();
  // The /dev/fuse descriptor to wait on (valid after mount() or adopt()).
  int fd() const;

  // Mounts as mount() does (the same options, fsname and subtype, through
  // libfuse's mount) and returns the /dev/fuse descriptor (close-on-exec)
  // with nobody serving it yet: the keeper's and --fd-store's mount, whose
  // connection outlives the daemon that serves it (daemon/takeover.h).
  static Result<int> mount_connection(const FuseSettings& settings);

  // Serves the connection on `fd` (mounted by mount_connection in another
  // process, or an earlier one) instead of mount(); the bridge owns `fd`.
  // libfuse sees every message through this bridge (its custom I/O):
  //   - without `takeover` the connection is new: the kernel's INIT and
  //     libfuse's reply are kept in `init_file` (0600, replaced atomically)
  //     when they pass;
  //   - with `takeover` a dead daemon had served it: libfuse is given the
  //     INIT kept in `init_file` (so it negotiates what the kernel already
  //     agreed to), its reply is not sent (the kernel would refuse a second
  //     INIT), and the kernel is told to resend the requests the dead daemon
  //     had read and not answered (FUSE_NOTIFY_RESEND, Linux 6.9; older
  //     kernels refuse it, which is logged). EIO when there is no INIT kept.
  Result<void> adopt(int fd, const std::string& init_file, bool takeover);

  // The FUSE unique id (without FUSE_UNIQUE_RESEND) of the command running
  // now, where commands run; 0 outside one. The journal records it with
  // the command so that a resent command is not applied twice.
  static uint64_t current_unique();
  // Whether the command running now is one the kernel resent.
  static bool current_is_resend();
  // The result of the command running now, set before the commit hook
  // runs: bytes written, or -errno.
  static int64_t current_result();

  // Asked, where commands run, before a command the kernel resent runs:
  // the result the journal holds for its unique id (a daemon that died had
  // applied and journaled it but not answered), which is then the answer,
  // or nullopt: the command runs.
  void set_applied_hook(std::function<std::optional<int64_t>(uint64_t unique)> hook);

  // Called with each request's opcode before it is dispatched (the daemon
  // drains the fork and exit events there so that forks are known before a
  // tasks file is opened).
  void set_request_hook(std::function<void(uint32_t opcode)> hook);

  // Called before a command that may change the model (write, mkdir,
  // rmdir, rename, setattr) runs, where it runs: an error refuses the
  // command, which then never reaches fs/, with the error's errno (the
  // daemon's state journal cannot be written, so the change could not be
  // made durable; the hook has set last_cmd_status).
  void set_prepare_hook(std::function<Result<void>()> hook);

  // Called after such a command, whether it succeeded or failed (a tasks
  // write that fails part way keeps what it moved before the failure),
  // and before its reply is sent: the daemon makes whatever changed
  // durable there, so that the tree a crash leaves is the one replied to.
  // An error replaces a successful command's reply (the hook has set
  // last_cmd_status); a failed command keeps its own. Runs where the
  // command runs.
  void set_commit_hook(std::function<Result<void>()> hook);

  // Called after a successful write(2), after the commit hook and before
  // the reply: the daemon tells the kernel there about the files and
  // listings the write changed (info/L3_MON's files after a mode write),
  // so that the writer's next request already sees them. A write holds no
  // directory lock the kernel needs for that; mkdir, rmdir and rename do
  // (the parent's), so theirs are told after the reply.
  void set_write_reply_hook(std::function<void()> hook);

  // Where commands run: `runner` gets each command's handler (which calls
  // fs/, the commit hook and replies) and must run them one at a time, in
  // order. Unset: they run in place, on the loop's thread.
  void set_command_runner(std::function<void(std::function<void()>)> runner);

  enum class Step { kProcessed, kAgain, kEnded };
  // Reads one request and processes it (the reply is sent before this
  // returns, except a command's, which the command runner sends). kEnded:
  // the file system was unmounted or the session failed.
  Step process_one();

  // Sends invalidations to the kernel from a helper thread: the kernel may
  // need locks held by another process's pending request, which this thread
  // must stay free to serve. Waits up to 20 ms for them to be taken, so the
  // client whose request changed the tree sees the change at once.
  void post_invalidations(std::vector<Invalidation> items);

  // Unmounts (lazily if busy) and closes the session fd. Idempotent. An
  // adopted connection is detached with umount2(MNT_DETACH).
  void unmount();

 private:
  struct Impl;
  explicit FuseBridge(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace resctrlfs::daemon

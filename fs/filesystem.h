// Defines fs::Filesystem, the only type daemon/ calls: the resctrl tree as
// inode-indexed operations with plain types in and Result out. The errno of
// a failed Result becomes the FUSE reply; fs/ itself maintains
// info/last_cmd_status with the kernel's wording.
//
// Nothing here includes libfuse. Inode 1 is the mount root.
//
// last_cmd_status: fs/ writes info/last_cmd_status itself, following the
// kernel's clear/append rules; the message of a returned Error repeats the
// text for logging and must not be written anywhere by the caller.
//
// Lookup counts: lookup() and a successful mkdir() each add one reference to
// the returned inode; readdir() adds none (a readdirplus implementation must
// call lookup() for each entry it returns). Removed nodes stay resolvable by
// inode (getattr; open/render/write fail with ENODEV) until forget() drops their
// last reference. readdir() lists neither "." nor "..".
//
// Threading: every public method takes the locks it needs itself; callers
// need not serialise. Commands (write, mkdir, rmdir, rename, setattr,
// mount, unmount, tick, the hotplug calls, the restores, and renders of
// files whose OpenFile says reads_hardware) run one at a time and may wait
// on the hardware layer's register accesses (a broker round trip); every
// other method (lookup, getattr, readdir, open, forget, the other renders,
// on_fork, on_exit, status and the state documents) waits only for the
// model, never for a register access in progress, and sees the
// configuration as it was before the running command. Methods never block
// on I/O other than those register accesses and the TaskSource (which
// reads /proc for tasks files and task moves).
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "fs/mount_options.h"
#include "hw/arch.h"

namespace resctrlfs::fs {

using Ino = uint64_t;
inline constexpr Ino kRootIno = 1;

// The largest write(2) a file takes: kernfs hands resctrl one page at most
// (its atomic_write_len); anything longer is E2BIG before any handler runs.
inline constexpr size_t kMaxWriteBytes = 4096;

class PidView;

// Who is asking: taken from the FUSE request.
struct Caller {
  pid_t tid = 0;  // the calling thread (FUSE reports the thread id)
  uid_t uid = 0;
  gid_t gid = 0;
  // Set by fs/ itself for a write to a tasks file when the caller's pid
  // namespace is not the daemon's (TaskSource::pid_view); null otherwise.
  PidView* pids = nullptr;
};

struct Attr {
  Ino ino = 0;
  uint32_t mode = 0;  // including S_IFDIR / S_IFREG
  uid_t uid = 0;
  gid_t gid = 0;
  uint32_t nlink = 1;
  uint64_t size = 0;  // always 0, like kernfs
  // Timestamps, seconds since the epoch.
  int64_t mtime = 0;
  int64_t ctime = 0;
};

struct DirEntry {
  std::string name;
  Attr attr;
};

// An open file: its identity and access mode. Nothing is rendered at open:
// the kernel's seq_file generates a file's contents at the first read(2)
// and again at every read at offset 0 (Filesystem::render), so an fd opened
// before a change reads the change, and a file whose rendering fails (e.g.
// available_mbm_cntrs outside mbm_event mode) opens fine and fails its reads.
struct OpenFile {
  Ino ino = 0;
  bool readable = false;
  bool writable = false;
  // Rendering reads registers (event files): it waits for a command in
  // progress, so a caller serving other requests meanwhile renders it
  // where it runs commands.
  bool reads_hardware = false;
};

// Notifications fs/ sends when it changes the tree by itself (not as the
// direct result of a request on that entry): the daemon invalidates the
// kernel's caches for them, outside the request path.
class InvalidationSink {
 public:
  virtual ~InvalidationSink() = default;
  virtual void inval_entry(Ino parent, const std::string& name) = 0;
  virtual void inval_inode(Ino ino) = 0;
};

// Thread ids as a caller in another pid namespace than the daemon's sees
// them: the kernel reads the ids written to a tasks file in the writer's
// namespace and lists the ids of the reader's, leaving out the threads the
// reader cannot see (those outside its namespace and its descendants).
class PidView {
 public:
  virtual ~PidView() = default;
  // The daemon's id of the thread the caller calls `id`; 0 when the
  // caller's namespace has no thread `id`.
  virtual pid_t to_daemon(pid_t id) = 0;
  // The caller's id of the daemon's thread `tid`; 0 when the caller cannot
  // see it.
  virtual pid_t from_daemon(pid_t tid) = 0;
};

// Sets of the thread ids that exist, for tasks listing, ESRCH and
// permission checks. The real implementation reads /proc; tests fake it.
//
// Only "no such thread" (ENOENT or ESRCH from /proc) says that a thread is
// gone. A lookup or walk that failed otherwise (EMFILE or ENFILE: no
// descriptor left; ENOMEM) says nothing about the threads: it is an error,
// and the callers keep what they knew (a live thread taken for gone would
// lose its tags and leave its group).
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  // Every thread id on the system (as seen from the daemon), or the errno
  // of a walk that could not be completed (never a partial list).
  virtual Result<std::vector<pid_t>> all_threads() = 0;
  // The same with each thread's process (thread group) id, 0 if unknown.
  virtual Result<std::vector<std::pair<pid_t, pid_t>>> all_threads_with_process() {
    RESCTRLFS_ASSIGN_OR_RETURN(std::vector<pid_t> tids, all_threads());
    std::vector<std::pair<pid_t, pid_t>> out;
    for (pid_t tid : tids) out.emplace_back(tid, 0);
    return out;
  }
  // 0 when thread `tid` exists, ESRCH when it does not, another errno
  // (EMFILE, ENFILE, ENOMEM...) when the lookup failed and nothing is known.
  virtual int lookup(pid_t tid) = 0;
  // Real and saved uid of a thread, for the move permission check: 0, ESRCH
  // for a thread that does not exist, or the errno of a failed lookup.
  virtual int uids(pid_t tid, uid_t& ruid, uid_t& suid) = 0;
  // Whether `tid` is a process that has exited and waits for its parent to
  // reap it (a zombie): it is still listed, and no event will say when it
  // is reaped.
  virtual bool zombie(pid_t tid) {
    (void)tid;
    return false;
  }
  // The ids as thread `caller_tid` sees them, or null when it shares the
  // daemon's pid namespace (or is gone): then ids need no translation, and
  // finding that out costs one look at the caller, never one per id.
  virtual std::unique_ptr<PidView> pid_view(pid_t caller_tid) {
    (void)caller_tid;
    return nullptr;
  }
};

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  // Performs the kernel's mount: validates options against the platform
  // (EINVAL with a message for the log if one cannot be honoured), sets up
  // CDP, the root group and monitoring. Called once before serving.
  virtual Result<void> mount(const MountOptions& opts) = 0;
  // The kernel's unmount: resets controls and associations.
  virtual void unmount() = 0;

  virtual Result<Attr> lookup(Ino parent, std::string_view name) = 0;
  virtual Result<Attr> getattr(Ino ino) = 0;
  virtual Result<std::vector<DirEntry>> readdir(Ino ino) = 0;
  // chmod / chown / utimes as kernfs allows them.
  virtual Result<Attr> setattr(Ino ino, const uint32_t* mode, const uid_t* uid,
                               const gid_t* gid) = 0;

  // open(2) with the extra permission check of resctrl. Renders nothing and
  // leaves last_cmd_status alone (the kernel's open takes no group lock).
  // O_CREAT of a new name never reaches here (create() does).
  virtual Result<OpenFile> open(Ino ino, int flags, const Caller& caller) = 0;
  // Generates the contents of a readable file, as the kernel's seq_file
  // does at the first read(2) of an fd and at every read at offset 0 (a
  // group file's show also clears last_cmd_status, as the group lock does
  // on tip). ENODEV once the file was removed (its group is gone), ENOENT
  // for an unknown inode, EISDIR for a directory, or the errno of a show
  // that fails (EINVAL for available_mbm_cntrs outside mbm_event mode, ...).
  virtual Result<std::string> render(Ino ino, const Caller& caller) = 0;
  // render() as an immutable shared buffer, which the caller keeps as its
  // fd's snapshot for reads past offset 0. A file whose text is cached
  // (a tasks file while the thread table is kept) hands out its cached
  // buffer without a copy; a later change renders a new buffer and leaves
  // the ones handed out as they were. The same rules as render().
  virtual Result<std::shared_ptr<const std::string>> render_shared(Ino ino, const Caller& caller) {
    Result<std::string> r = render(ino, caller);
    if (!r.ok()) return std::move(r).error();
    return std::make_shared<const std::string>(std::move(r).value());
  }
  // One write(2): one command, whatever the offset. Returns bytes consumed.
  // More than kMaxWriteBytes: E2BIG.
  virtual Result<size_t> write(Ino ino, std::string_view data, const Caller& caller) = 0;
  // Creating files is not allowed (EACCES), nor mknod/symlink/link (EPERM).
  virtual Result<Attr> create(Ino parent, std::string_view name) = 0;
  virtual Result<void> unlink(Ino parent, std::string_view name) = 0;

  virtual Result<Attr> mkdir(Ino parent, std::string_view name, uint32_t mode,
                             const Caller& caller) = 0;
  virtual Result<void> rmdir(Ino parent, std::string_view name) = 0;
  virtual Result<void> rename(Ino parent, std::string_view name, Ino newparent,
                              std::string_view newname, unsigned flags) = 0;
  // The kernel dropped `nlookup` references to `ino`.
  virtual void forget(Ino ino, uint64_t nlookup) = 0;

  // Timers: the limbo check and MBM overflow/mba_sc every 1000 ms. `now` is
  // the monotonic time the daemon's event loop saw.
  virtual void tick(std::chrono::steady_clock::time_point now) = 0;

  // The kernel's task events: `parent_tid` is the thread that created
  // `child_tid` (whose group the child inherits), in the order they happened.
  virtual void on_fork(pid_t parent_tid, pid_t child_tid) = 0;
  virtual void on_exit(pid_t tid) = 0;
  // on_exit() with the thread's process id (`tgid`, 0 if unknown). A
  // process's leader (tid == tgid; while threads are tracked, also a thread
  // whose process is not known) stays in its group after its exit, as a
  // zombie does in the kernel's tasks files, until the TaskSource no longer
  // shows it (its parent waited for it): no event reports that, so it is
  // looked for at each tasks listing and each tick. Another thread is gone
  // at its exit.
  virtual void on_thread_exit(pid_t tid, pid_t tgid) {
    (void)tgid;
    on_exit(tid);
  }
  // on_fork() with the child's process id (`child_tgid`, 0 if unknown).
  virtual void on_thread_fork(pid_t parent_tid, pid_t child_tid, pid_t child_tgid) {
    (void)child_tgid;
    on_fork(parent_tid, child_tid);
  }
  // Process `tgid` called exec: its one thread is now `tgid`, whichever
  // thread called it (the others are gone, without exit events of their own
  // for the caller's old id).
  virtual void on_exec(pid_t tgid) { (void)tgid; }
  // Thread tracking. With `on`, the caller promises an on_thread_fork/
  // on_fork, on_exec and on_exit for every thread of the system from now
  // on (the proc connector): the live threads are read once from the
  // TaskSource and kept from the events, and a tasks file is rendered from
  // that table (cached per group until its threads change) instead of
  // walking the TaskSource at each open. Off (the default): every open of
  // a tasks file walks the TaskSource, which also forgets the tagged
  // threads that died.
  virtual void track_threads(bool on) { (void)on; }
  // The caller lost events (the connector's socket overflowed): the live
  // threads are read again from the TaskSource and dead ones forgotten.
  virtual void rescan_threads() {}

  // CPU hotplug: the OS side of the kernel's cpuhp callbacks
  // (resctrl_offline_cpu / resctrl_online_cpu, with the arch's domain
  // up-calls in between). The caller powers the CPU down after
  // cpu_offline() and up before cpu_online().
  //   - cpu_offline: the CPU leaves every group's cpus; each domain left
  //     without online CPUs goes away: its mon_<RES>_<id> directory from
  //     every group's mon_data (the kernel's dcache is told), its entries
  //     from schemata/size/bit_usage, its limbo marks (force-cleared) and
  //     its assigned counters.
  //   - cpu_online: a domain that comes back has the default control value
  //     for every CLOSID and fresh MBM state; its mon_data directories are
  //     re-created in every group; the CPU joins the default group.
  // Errors (nothing changed): EINVAL (no such CPU, or already in that
  // state), EBUSY (the last online CPU), EOPNOTSUPP (the hardware layer
  // cannot follow hotplug), EIO (a register write failed).
  virtual Result<void> cpu_offline(unsigned cpu) {
    (void)cpu;
    return Error::make(ENOSYS, "CPU hotplug not implemented");
  }
  virtual Result<void> cpu_online(unsigned cpu) {
    (void)cpu;
    return Error::make(ENOSYS, "CPU hotplug not implemented");
  }

  // A JSON-ish status text for the control socket (platform, groups, pools,
  // limbo), as a serialized JSON object.
  virtual std::string status_json() = 0;
  // The backend's texts of the CPU association writes that failed since
  // the last call (at most a few dozen; status counts every one), for the
  // daemon's log. A cpus write reports none of them, as in the kernel.
  virtual std::vector<std::string> take_hw_write_failures() { return {}; }

  // The model as a JSON document for the daemon's journal: groups (names,
  // types, modes, CLOSID/RMID, schemata values, CPUs), thread memberships and
  // the global info settings. restore_state_json() re-creates that model on
  // a freshly mounted Filesystem (same platform and mount options) and
  // re-programs the hardware; it fails with EINVAL when the document does
  // not fit (unknown platform shape, ids out of range, not mounted).
  virtual std::string save_state_json() { return "{}"; }
  // For an append-only journal: save_state_json(), and from now on
  // take_state_delta_json() reports changes relative to this document.
  virtual std::string take_state_snapshot_json() { return save_state_json(); }
  // What changed in that document since the last take_state_*() call, as a
  // small JSON delta for fs::StateReplay (fs/state_replay.h): "" when
  // nothing changed; nullopt when the change cannot be expressed as a delta
  // (a mount, an info setting, a cpus write, ...): take a snapshot then.
  // Whatever changes the saved state outside write/mkdir/rmdir/rename/
  // setattr and the fork/exit events must make this return nullopt.
  virtual std::optional<std::string> take_state_delta_json() { return std::nullopt; }
  virtual Result<void> restore_state_json(const std::string& json) {
    return Error::make(ENOSYS, "state restore not implemented");
  }

  // The daemon refused a command before it ran, or could not journal the
  // change of one that ran (its state journal, daemon/journal.h):
  // info/last_cmd_status is cleared and then says `text`, as after a
  // command that failed with it.
  virtual void set_command_status(std::string_view text) { (void)text; }

  // What survives an unmount in the kernel until reboot:
  // max_threshold_occupancy, the RMID free-list order and limbo marks, the
  // counter-assignment mode, mbm_assign_on_mkdir, the event filters, the
  // BMEC configurations and the schemata name width, as a JSON document.
  // Taken while mounted, the RMIDs of the groups count as released, as an
  // unmount at that moment would leave them. restore_boot_state_json()
  // applies such a document to a Filesystem that is not mounted (a daemon
  // replacing one that was unmounted); EINVAL for a document that does not
  // fit, with nothing applied, EBUSY while mounted.
  virtual std::string save_boot_state_json() { return "{}"; }
  virtual Result<void> restore_boot_state_json(const std::string& json) {
    return Error::make(ENOSYS, "boot state not implemented");
  }
};

struct FilesystemConfig {
  hw::Arch* arch = nullptr;           // not owned; must outlive the Filesystem
  TaskSource* tasks = nullptr;        // not owned
  InvalidationSink* inval = nullptr;  // may be null
  uid_t mount_uid = 0;
  gid_t mount_gid = 0;
};

std::unique_ptr<Filesystem> make_filesystem(const FilesystemConfig& cfg);

// The real TaskSource, reading /proc.
std::unique_ptr<TaskSource> make_proc_task_source();

}  // namespace resctrlfs::fs

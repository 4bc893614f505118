// Declares the parts of the resctrl model behind fs::Filesystem: Model,
// the state several parts share (per mount and surviving an unmount), and
// the objects with one job each that work on it — the tree (directories and
// file rows), groups and their life cycle, the per-CPU ownership tables,
// the control files, the info files, monitoring, io_alloc and cache
// pseudo-locking. Each part holds the Model and, by reference, exactly the
// parts it calls: its constructor names them, and those constructors are
// the dependency graph of the parts, acyclic (docs/architecture.md, "The
// parts of fs/ and what each uses", draws it; tests/fs/check_part_graph.py
// reads the constructors here and checks both). FsImpl (fs/impl.h), the
// root, owns them all, takes the lock and calls into them; only the root
// and the file table's dispatch (Parts, the thunks at the end of this
// header) see every part. Internal to fs/.
//
// Locking: every part assumes FsImpl::mu_ (the model lock) is held, and
// FsImpl::cmd_mu_ (the command lock, the rdtgroup_mutex analogue) too for
// anything that reaches the hardware; a register access may let go of mu_
// while it waits on the broker (fs/impl.h, "Locking"), and readers then see
// the model as the part left it before the call: a part changes what a
// file shows only once the hardware took the change.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fs/change_tracker.h"
#include "fs/filesystem.h"
#include "fs/lock_assert.h"
#include "fs/model.h"
#include "fs/node_table.h"
#include "fs/pools.h"
#include "fs/thread_tags.h"
#include "hw/arch.h"
#include "schemata/schemata.h"

namespace resctrlfs::fs::internal {

// A failed register write (hw::write_failure(): the architecture returns
// the code, fs/ words it) as the user reads it; ours: the kernel's register
// writes cannot fail.
inline constexpr std::string_view kWriteFailedText = "Failed to write hardware register\n";
// What a failed command leaves in last_cmd_status: Error::user_text(), or
// kWriteFailedText for a failed register write.
inline std::string_view user_text(const Error& e) {
  return hw::is_write_failure(e) ? kWriteFailedText : e.user_text();
}
// An error of hw/ as a user reads it (a failed register write worded), for
// the entry points that hand it on without last_cmd_status (hotplug, mount).
inline Error worded(Error e) {
  return hw::is_write_failure(e) ? Error::make(EIO, std::string(kWriteFailedText)) : std::move(e);
}

// Whether resource `r` is in a mount with `opts`: alloc_capable and, for a
// resource of ours (hw::Resource::mount_option), its option given.
bool in_mount(const hw::Resource& r, const MountOptions& opts);

// The state the parts share. Plain data, with the few queries every part
// asks of it.
struct Model {
  explicit Model(const FilesystemConfig& cfg);

  // FsImpl's locks (fs/impl.h, "Locking"), for RESCTRLFS_ASSERT_HELD: the
  // model lock and the command lock. Null in a Model used without them.
  const OwnedMutex* model_mu = nullptr;
  const OwnedMutex* cmd_mu = nullptr;

  hw::Arch* arch;
  TaskSource* tasks;
  InvalidationSink* inval;
  uid_t mount_uid;
  gid_t mount_gid;
  const hw::PlatformInfo& info;

  // Survives unmount (the kernel keeps it until reboot). The monitoring
  // settings that do are the Monitor part's (MonSettings).
  unsigned max_name_width = 0;
  LastCmdStatus lcs;
  std::optional<std::chrono::steady_clock::time_point> last_tick;

  // Per mount.
  bool mounted = false;
  MountOptions opts;
  schemata::SchemaList schemas;
  ClosidPool closids;
  std::list<std::unique_ptr<Group>> groups;  // root first
  Group* root = nullptr;
  ThreadTags threads;  // per-thread tags
  LiveThreads live;    // every live thread, when events keep it (tracking)
  // Rendered tasks text per CTRL_MON CLOSID (key = closid) and per MON
  // group RMID (key = 1 << 32 | rmid), when tracking.
  std::unordered_map<uint64_t, TasksText> tasks_text;

  // Nodes.
  NodeTable nodes;
  // nodes.next_base() as the journal last had it (a snapshot's or a
  // delta's "next_node_base").
  uint32_t journaled_next_base = 0;
  Node* root_node = nullptr;
  Ino info_ino = 0;
  Ino info_mon_ino = 0;

  // What changed since the journal last took the state.
  ChangeTracker changes;

  // The one writer of last_cmd_status after a command: `text` (seq_buf
  // printf semantics), then a failed result's kernel text (its user_text():
  // none for a log-only error).
  void set_status(std::string_view text);
  template <typename T>
  void set_status(const Result<T>& r) {
    if (!r.ok()) lcs.printf(user_text(r.error()));
  }
  // Any monitor resource (L3 or telemetry): groups get mon_data/mon_groups.
  bool mon_capable() const { return info.mon_capable(); }
  // What a part relies on (RESCTRLFS_ASSERT_HELD): the model lock for the
  // model, and the command lock too for a call that reaches the hardware.
  void assert_model_locked() const { RESCTRLFS_ASSERT_HELD(model_mu); }
  void assert_command_locked() const {
    RESCTRLFS_ASSERT_HELD(cmd_mu);
    RESCTRLFS_ASSERT_HELD(model_mu);
  }
  // Any allocation resource in this mount (see in_mount()).
  bool alloc_capable() const;
  bool event_enabled(hw::EventId ev) const;
  bool is_mbm(hw::EventId ev) const {
    return ev == hw::EventId::MBM_TOTAL || ev == hw::EventId::MBM_LOCAL;
  }
  hw::EventId default_mba_event() const;
  bool is_root(const Group* g) const { return g == root; }
  // Calls f(const Group&) for the default group, then each CTRL_MON group
  // (the group directories of the root), until f returns true; whether one
  // did. A walk of groups would visit every MON group too.
  template <typename F>
  bool any_ctrl_group(F f) const {
    if (root == nullptr) return false;
    if (f(*root)) return true;
    if (root_node == nullptr) return false;
    for (const ChildMap::Entry& e : root_node->children) {
      if (!e.dir) continue;
      const Node* p = nodes.get(e.ino);
      if (p == nullptr) continue;
      const Node& n = *p;
      if (n.kind != NodeKind::kGroupDir || n.group == nullptr || n.group == root) continue;
      if (f(*n.group)) return true;
    }
    return false;
  }
  static int64_t now_seconds();
};

class Tree;
class Groups;
class CpuOwners;
class CtrlFiles;
class InfoFiles;
class Monitor;
class IoAlloc;
class PseudoLock;
class IoChannels;  // fs/io_channels.h

// Every part and the model, as the root sees them: the file table's
// dispatch (pick() below routes a row to its part; a handler that is no
// part's member takes them too, fs/file_rows.h) and the code of FsImpl
// that orchestrates all parts (mount, state restore, boot state, hotplug).
// No part holds it.
struct Parts {
  Tree& tree;
  Groups& groups;
  CpuOwners& cpus;
  CtrlFiles& ctrl;
  InfoFiles& info_files;
  Monitor& mon;
  IoAlloc& io_alloc;
  PseudoLock& plock;
  IoChannels& io_ch;
  Model& model;
};

// What every part holds: the model. The parts it calls it takes in its
// constructor.
class Part {
 public:
  explicit Part(Model& m) : m_(m) {}

 protected:
  Model& m_;
};

// The tree's one question to the root: whether a file row's condition
// holds now (FileRow::cond names a handler of any part, the monitoring
// mode's say). The root answers it through the file table's dispatch; an
// up-call, so the tree needs none of the parts the conditions ask.
class RowConditions {
 public:
  virtual bool holds(const FileRow& row) = 0;

 protected:
  ~RowConditions() = default;
};

// The tree: directories, their file rows and attributes (tree.cc). A
// file's read is the root's: the file table routes it to its handler.
class Tree final : public Part {
 public:
  Tree(Model& m, IoChannels& io_ch, RowConditions& rows) : Part(m), io_ch_(io_ch), rows_(rows) {}
  void add_file_rows(Node* dir, uint32_t flags, uid_t uid, gid_t gid);
  // Adds/removes rows of `dir` whose condition changed (BMEC visibility).
  void sync_file_rows(Node* dir, uint32_t flags);
  Attr attr_of(const Node& n) const;
  uint32_t group_flags(const Group& g) const;
  void build_group_dir(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid);
  void build_mon_data(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid);
  // One mon_<RES>_<id> directory of resource `rid`'s monitoring domain
  // `domain_id` and its event files under `mon_data`, which lends it mode
  // and owner; under SNC the node's mon_sub_<RES>_<node> below its cache's
  // directory (made first if absent). Returns the topmost node created.
  Node* build_mon_domain(Node* mon_data, hw::ResourceId rid, int domain_id);
  void build_info_tree();
  Group* group_of(const Node& n) const;  // null for info nodes

 private:
  IoChannels& io_ch_;
  RowConditions& rows_;
};

// The name of a monitoring domain's directory in mon_data: mon_<RES>_<id>,
// or mon_sub_<RES>_<id> for an SNC node below its cache's directory.
std::string mon_domain_dir_name(hw::ResourceId rid, int id, bool sub);

// Groups: mount and unmount, mkdir/rmdir/rename of CTRL_MON and MON
// groups, and thread membership (groups.cc, membership.cc).
class Groups final : public Part {
 public:
  Groups(Model& m, Tree& tree, CpuOwners& cpus, CtrlFiles& ctrl, IoAlloc& io_alloc,
         IoChannels& io_ch, Monitor& mon, PseudoLock& plock)
      : Part(m),
        tree_(tree),
        cpus_(cpus),
        ctrl_(ctrl),
        io_alloc_(io_alloc),
        io_ch_(io_ch),
        mon_(mon),
        plock_(plock) {}
  // mount() and unmount() under the lock.
  Result<void> mount_locked(const MountOptions& opts);
  Result<void> check_mount(const MountOptions& opts) const;
  void build_schemas(const MountOptions& opts);
  void unmount_locked();
  // The two kinds of mkdir; `status` gets what last_cmd_status says after
  // a successful one.
  Result<Attr> mkdir_ctrl_mon(Node* parent, std::string_view name, uint32_t mode,
                              const Caller& caller, std::string& status);
  Result<Attr> mkdir_mon(Node* parent, std::string_view name, uint32_t mode, const Caller& caller,
                         std::string& status);
  // Their common tail: the directory of new group `g`, owned by the caller
  // (the mount's owner for root), with its files and mon_data.
  Result<Attr> add_group_dir(Group* g, Node* parent, std::string_view name, uint32_t mode,
                             const Caller& caller);
  Result<void> rmdir_ctrl(Group* g);
  // rename: whether the kernel finds private data behind `n`
  // (kernfs_to_rdtgroup()); without it a rename fails with ENOENT.
  bool rename_has_priv(const Node& n) const;
  // rename after the kernel took the lock and cleared last_cmd_status.
  Result<void> rename_locked(Node* p, Node* src, Node* np, std::string_view newname);
  Result<void> rmdir_mon(Group* g);
  void destroy_group(Group* g);  // frees ids and the struct (no task/cpu moves)
  Group* new_group();
  // Tags a thread (and tells the journal and the hardware).
  void set_thread(pid_t tid, uint32_t closid, uint32_t rmid);
  // Moves every thread of `from` (CLOSID match for CTRL_MON, RMID match for
  // MON) to `to`'s tags.
  void move_group_tasks(const Group* from, const Group* to);
  // `pid` as the writer sees it (c.pids translates it when set).
  Result<void> move_task(pid_t pid, Group* g, const Caller& c);
  // The tasks file.
  Result<std::string> show_tasks(const Node& n);
  // show_tasks without a copy of the cached text (render_shared).
  Result<std::shared_ptr<const std::string>> show_tasks_shared(const Node& n);
  // The tracked path of show_tasks: the live-thread table, cached text.
  // A change renders a new buffer; buffers handed out stay as they were.
  const std::shared_ptr<const std::string>& tracked_tasks_text(const Group* g);
  // Reads the live threads from the TaskSource and forgets the tagged
  // threads that died (tracking). A walk that fails leaves the table as it
  // was, marked for another rescan (LiveThreads::rescan_pending), and
  // returns the walk's error.
  Result<void> rescan_threads();
  // The rescan a failed one left pending, if any (tracking).
  Result<void> rescan_if_pending();
  // A thread is gone: it leaves the live table and its tags.
  void thread_gone(pid_t tid);
  // The threads whose exit was reported while they may have been zombies
  // (LiveThreads::mark_exited) and that the TaskSource no longer shows are
  // gone.
  void forget_reaped();
  Result<void> write_tasks(Node& n, std::string_view data, const Caller& c);

 private:
  Tree& tree_;
  CpuOwners& cpus_;
  CtrlFiles& ctrl_;
  IoAlloc& io_alloc_;
  IoChannels& io_ch_;
  Monitor& mon_;
  PseudoLock& plock_;
};

// The per-CPU tables behind the groups' cpus files, which it owns: each
// CPU's owning groups and the tags last programmed (membership.cc).
class CpuOwners final : public Part {
 public:
  CpuOwners(Model& m, PseudoLock& plock) : Part(m), plock_(plock) {}
  // Per-CPU and per-thread tags. A CPU's tags come from its owners
  // (cpu_ctrl_, cpu_mon_), kept up to date by every change of group CPUs,
  // so that a change costs the CPUs it moves, not CPUs x groups.
  std::pair<uint32_t, uint32_t> cpu_tags(unsigned cpu) const;
  // Derives the owner tables from the groups' CPU masks (mount, restore):
  // a CPU belongs to the first non-default CTRL_MON group holding it, else
  // to the default group, and within that to the first MON group holding it.
  void rebuild_cpu_owners();
  // Rebuilds the owner tables and programs every online CPU.
  void update_cpu_assoc();
  // Programs the online CPUs of `which` whose tags changed, and retries
  // every CPU whose last write failed, all in one batch to hw/; a failure
  // is remembered in cpu_assoc_failed_ for the next update.
  void update_cpu_assoc(const CpuMask& which);
  Group* cpu_ctrl(unsigned cpu) const {
    return cpu_ctrl_[cpu] != nullptr ? cpu_ctrl_[cpu] : m_.root;
  }
  Result<void> write_cpus_common(Node& n, std::string_view data, bool list);
  Result<void> set_ctrl_cpus(Group* g, const CpuMask& newmask, CpuMask& touched);
  Result<void> set_mon_cpus(Group* g, const CpuMask& newmask, CpuMask& touched);
  Result<std::string> show_cpus(const Node& n);
  Result<std::string> show_cpus_list(const Node& n);
  Result<void> write_cpus(Node& n, std::string_view data, const Caller& c);
  Result<void> write_cpus_list(Node& n, std::string_view data, const Caller& c);
  // Mount: nothing programmed yet.
  void reset();
  // Group `g` goes away: no CPU may stay owned by it.
  void forget_owner(const Group* g);
  // `cpus` go back to the default group (their CTRL_MON group's rmdir).
  void to_default(const CpuMask& cpus);
  // Hotplug: `cpu` leaves every group; `cpu` came back with the default
  // group's tags programmed.
  void cpu_gone(unsigned cpu);
  void cpu_back(unsigned cpu);
  // Association writes that failed since the daemon started, the online
  // CPUs whose tags are not applied now (their last write failed; retried
  // by the next change), and the backend's texts of the failures not yet
  // taken (at most kMaxPendingFailures; the rest only counted).
  uint64_t assoc_writes_failed() const { return assoc_writes_failed_; }
  CpuMask assoc_failing_cpus() const;
  std::vector<std::string> take_assoc_failures();
  static constexpr size_t kMaxPendingFailures = 64;

 private:
  PseudoLock& plock_;
  std::vector<std::pair<uint32_t, uint32_t>> cpu_assoc_;  // last programmed
  std::vector<bool> cpu_assoc_valid_;
  std::vector<unsigned> cpu_assoc_failed_;  // CPUs whose last write failed
  uint64_t assoc_writes_failed_ = 0;
  std::vector<std::string> assoc_failure_texts_;
  // Per CPU: its CTRL_MON group (null: the default group) and the MON group
  // of that group monitoring it (null: none).
  std::vector<Group*> cpu_ctrl_;
  std::vector<Group*> cpu_mon_;
};

// The control files of a group: schemata, mode, size and the hardware
// ids (ctrl_files.cc).
class CtrlFiles final : public Part {
 public:
  CtrlFiles(Model& m, Monitor& mon, PseudoLock& plock) : Part(m), mon_(mon), plock_(plock) {}
  Result<std::string> show_schemata(const Node& n);
  Result<void> write_schemata(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_mode(const Node& n);
  Result<void> write_mode(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_size(const Node& n);
  Result<std::string> show_mba_mbps_event(const Node& n);
  Result<void> write_mba_mbps_event(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_ctrl_hw_id(const Node& n);
  Result<std::string> show_mon_hw_id(const Node& n);
  uint32_t ctrl_value(int schema, int domain, uint32_t closid) const;
  bool cbm_overlaps(const schemata::Schema& s, int domain, uint32_t cbm, uint32_t closid,
                    bool exclusive_only) const;
  // A new group's default values: the default bandwidth, and for caches
  // default_cbm() on every domain.
  Result<void> init_alloc(Group* g);
  // A new CLOSID's mask on one domain of cache schema `s`: every bit that
  // no exclusive group and no pseudo-locked region holds (its lowest
  // contiguous run without sparse masks), or nothing when fewer than
  // min_cbm_bits bits are left.
  std::optional<uint32_t> default_cbm(const schemata::Schema& s, int domain, uint32_t closid) const;
  // The checks a schemata write of group `g` applies to a cache mask.
  std::unique_ptr<schemata::CbmPolicy> cbm_policy(const Group& g);
  const Group* ctrl_group_by_closid(uint32_t closid) const;
  // The tail of a valid schemata or io_alloc_cbm write: software-controller
  // (mba_sc) values become MBps targets, the others one all-or-nothing
  // hardware update of `closid`.
  Result<void> apply_staged(const std::vector<schemata::StagedValue>& staged, uint32_t closid);

 private:
  Monitor& mon_;
  PseudoLock& plock_;
};

// The files under info/ (info_files.cc).
class InfoFiles final : public Part {
 public:
  explicit InfoFiles(Model& m) : Part(m) {}
  // Row conditions. (The files' handlers are info_files.cc's, next to
  // their rows.)
  bool cond_throttle_mode() const;
  bool cond_mba_sc() const { return m_.opts.mba_mbps; }
};

// Monitoring: event reads, the RMID life cycle (limbo, overflow, mba_sc),
// ABMC counters (monitor.cc) and the monitoring info files
// (monitor_info.cc).
// The monitoring settings that survive an unmount (the kernel keeps them
// until reboot): what state save/restore and the boot state read and write.
struct MonSettings {
  uint32_t threshold = 0;  // max_threshold_occupancy, in bytes
  RmidPool rmids;
  bool mbm_event_mode = false;  // mbm_assign_mode
  bool assign_on_mkdir = false;
  uint32_t event_filter_total = 0;  // event_configs/<event>/event_filter
  uint32_t event_filter_local = 0;
};

class Monitor final : public Part {
 public:
  // Sets the boot values of the settings (and ABMC's mode in the hardware).
  Monitor(Model& m, Tree& tree, IoChannels& io_ch);
  MonSettings& settings() { return set_; }
  const MonSettings& settings() const { return set_; }
  RmidPool& rmids() { return set_.rmids; }
  bool mbm_event_mode() const { return set_.mbm_event_mode; }
  // mba_sc: the MBps target of `closid` on MB domain `domain` (UINT32_MAX:
  // none set).
  uint32_t mbps_target(int domain, uint32_t closid) const;
  void set_mbps_target(int domain, uint32_t closid, uint32_t mbps);
  void forget_closid(uint32_t closid);  // its mba_sc targets
  void forget_group(const Group* g);    // its mba_sc byte counts
  // Mount (`mounting`) and unmount: no mba_sc state; on mount every
  // monitoring domain's counters free.
  void reset_mount_state(bool mounting);
  // Hotplug, while mounted: a monitoring domain went (its counters and
  // byte counts with it) or came back (every counter free); an MB control
  // domain went (its mba_sc targets).
  void mon_domain_gone(int domain_id);
  void mon_domain_back(int domain_id);
  void mb_domain_gone(int domain_id);
  // Whether ABMC counters of monitoring domain `domain` exist (online).
  bool cntr_domain_online(int domain) const { return cntr_owner_.count(domain) != 0; }
  EventRead read_one(const Group* g, int domain, hw::EventId ev);
  EventRead read_group(const Group* g, int domain, hw::EventId ev);
  // SNC: read_group summed over the node domains sharing L3 cache `l3_id`.
  EventRead read_group_l3_sum(const Group* g, int l3_id, hw::EventId ev);
  Result<std::string> show_event_file(const Node& n);
  void reset_group_mbm(const Group* g);  // the "first" read at mon_data creation
  // Counters for a new group when assign_on_mkdir is set; a failure does
  // not fail the mkdir but leaves its text, returned, in last_cmd_status.
  std::string assign_cntrs_on_mkdir(Group* g);
  Result<void> assign_cntr(Group* g, int domain, hw::EventId ev);
  void unassign_cntr(Group* g, int domain, hw::EventId ev);
  void unassign_all_cntrs(Group* g);
  Result<void> set_assign_mode(bool mbm_event);
  unsigned free_cntrs(int domain) const;
  void limbo_pass();
  void overflow_pass(double elapsed_ms);
  // A group's monitoring id (RMID) and its CLOSID name one index of the
  // RMID pool (hw::Arch::rmid_idx_encode; the RMID itself unless the
  // architecture makes it depend on the CLOSID). alloc_rmid takes a free
  // index of `closid` and gives its RMID; free_rmid sends the index into
  // limbo; claim_rmid takes a given one (state restore).
  Result<uint32_t> alloc_rmid(uint32_t closid);
  void free_rmid(uint32_t closid, uint32_t rmid);
  bool claim_rmid(uint32_t closid, uint32_t rmid);
  uint32_t rmid_idx(uint32_t closid, uint32_t rmid) const;
  // A CLOSID for a new CTRL_MON group: the lowest free one, or, where
  // monitoring ids depend on the CLOSID, the one with the fewest of its
  // ids in limbo (the kernel's closid_alloc).
  Result<uint32_t> alloc_closid();
  Result<std::string> show_mbm_l3_assignments(const Node& n);
  Result<void> write_mbm_l3_assignments(Node& n, std::string_view data, const Caller& c);
  // The monitoring info files (monitor_info.cc).
  Result<std::string> show_num_rmids(const Node& n);
  Result<std::string> show_mon_features(const Node& n);
  Result<std::string> show_max_threshold_occupancy(const Node& n);
  Result<void> write_max_threshold_occupancy(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_mbm_total_config(const Node& n);
  Result<std::string> show_mbm_local_config(const Node& n);
  Result<void> write_mbm_total_config(Node& n, std::string_view data, const Caller& c);
  Result<void> write_mbm_local_config(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_mbm_assign_mode(const Node& n);
  Result<void> write_mbm_assign_mode(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_num_mbm_cntrs(const Node& n);
  Result<std::string> show_available_mbm_cntrs(const Node& n);
  Result<std::string> show_mbm_assign_on_mkdir(const Node& n);
  Result<void> write_mbm_assign_on_mkdir(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_event_filter(const Node& n);
  Result<void> write_event_filter(Node& n, std::string_view data, const Caller& c);
  bool cond_abmc() const { return m_.info.res(hw::ResourceId::L3).mon.cntr_assign.capable; }
  bool cond_bmec_total() const;
  bool cond_bmec_local() const;

 private:
  Result<void> write_bmec(Node& n, std::string_view data, hw::EventId ev);
  Result<std::string> show_bmec(hw::EventId ev) const;
  Tree& tree_;
  IoChannels& io_ch_;
  MonSettings set_;
  std::map<std::pair<int, uint32_t>, uint32_t> mbps_target_;  // (domain, closid)
  std::map<std::pair<const Group*, int>, uint64_t> mba_prev_bytes_;
  // ABMC: owner of each counter per monitoring domain (index = counter id).
  std::map<int, std::vector<std::optional<std::pair<Group*, hw::EventId>>>> cntr_owner_;
};

// io_alloc (io_alloc.cc).
class IoAlloc final : public Part {
 public:
  IoAlloc(Model& m, CtrlFiles& ctrl) : Part(m), ctrl_(ctrl) {}
  bool cond_io_alloc() const;
  Result<std::string> show_io_alloc(const Node& n);
  Result<void> write_io_alloc(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_io_alloc_cbm(const Node& n);
  Result<void> write_io_alloc_cbm(Node& n, std::string_view data, const Caller& c);
  bool io_alloc_capable(const schemata::Schema& s) const;
  bool io_alloc_on(const schemata::Schema& s) const;  // enabled on s's resource
  uint32_t io_alloc_closid(const schemata::Schema& s) const;
  // The control halves holding the io_alloc mask: NONE, or CODE and DATA.
  std::vector<hw::ConfType> io_alloc_types(const schemata::Schema& s) const;
  Result<void> set_io_alloc(hw::ResourceId rid, bool enable);
  void reset_io_alloc();  // disables it in the hardware (mount, unmount)
  // Enabled resources (by name) and their io_alloc masks per domain.
  std::map<std::string, std::map<int, uint32_t>> io_alloc_state() const;
  Result<void> restore_io_alloc(const std::string& resource, const std::map<int, uint32_t>& cbm);

 private:
  CtrlFiles& ctrl_;
};

// Cache pseudo-locking (pseudo_lock.cc).
class PseudoLock final : public Part {
 public:
  PseudoLock(Model& m, Monitor& mon) : Part(m), mon_(mon) {}
  // A region a schemata write is about to lock (same shape as LockedRegion).
  using PendingRegion = Group::LockedRegion;
  Result<void> locksetup_enter(Group* g);
  Result<void> locksetup_exit(Group* g);
  // Locks the region a valid schemata write of a pseudo-locksetup group
  // asked for; on failure the group stays in pseudo-locksetup.
  Result<void> pseudo_lock_create(Group* g, const PendingRegion& r);
  // Drops a pseudo-locksetup/locked group's lock state (rmdir, unmount):
  // the region is forgotten, a locksetup group's CLOSID freed.
  void pseudo_lock_remove(Group* g);
  // The mask locked on control domain `domain` of resource `resource_index`
  // (0: none).
  uint32_t locked_cbm(int resource_index, int domain) const;
  // Whether a locked region, or one of `pending`, sits on a cache domain
  // sharing CPUs with control domain `domain` of `resource_index`.
  bool locked_in_hierarchy(int resource_index, int domain,
                           const std::vector<PendingRegion>& pending) const;
  CpuMask ctrl_domain_cpus(int resource_index, int domain) const;
  // ENODEV "Cache domain offline\n" when a locked group's domain is gone.
  Result<void> check_locked_domain(const Group& g);
  // kernfs mode changes of locksetup: `perms` for a group's child `name`.
  void set_child_mode(Group* g, std::string_view name, uint32_t perms);
  void restrict_locksetup_files(Group* g);

 private:
  Monitor& mon_;
};

// The file table's view of the handlers: a row names a part's member
// function, and these thunks find the part.
inline Tree& pick(Parts& p, const Tree*) { return p.tree; }
inline Groups& pick(Parts& p, const Groups*) { return p.groups; }
inline CpuOwners& pick(Parts& p, const CpuOwners*) { return p.cpus; }
inline CtrlFiles& pick(Parts& p, const CtrlFiles*) { return p.ctrl; }
inline InfoFiles& pick(Parts& p, const InfoFiles*) { return p.info_files; }
inline Monitor& pick(Parts& p, const Monitor*) { return p.mon; }
inline IoAlloc& pick(Parts& p, const IoAlloc*) { return p.io_alloc; }
inline PseudoLock& pick(Parts& p, const PseudoLock*) { return p.plock; }
inline IoChannels& pick(Parts& p, const IoChannels*) { return p.io_ch; }
template <typename C, typename R, typename... A>
constexpr const C* class_of(R (C::*)(A...)) {
  return nullptr;
}
template <typename C, typename R, typename... A>
constexpr const C* class_of(R (C::*)(A...) const) {
  return nullptr;
}
template <auto M>
Result<std::string> show_fn(Parts& p, const Node& n) {
  return (pick(p, class_of(M)).*M)(n);
}
template <auto M>
Result<std::shared_ptr<const std::string>> show_shared_fn(Parts& p, const Node& n) {
  return (pick(p, class_of(M)).*M)(n);
}
template <auto M>
Result<void> write_fn(Parts& p, Node& n, std::string_view data, const Caller& c) {
  return (pick(p, class_of(M)).*M)(n, data, c);
}
template <auto M>
bool cond_fn(Parts& p) {
  return (pick(p, class_of(M)).*M)();
}

// A failed command: its errno and the text it leaves in last_cmd_status,
// exactly as the kernel words it (empty: none) — a user's text
// (Error::make). Text for the daemon's log only (a refused state document,
// say) is Error::log_only and never reaches last_cmd_status: set_status
// prints Error::user_text(). Handlers return fail(); only
// the entry points (write, render, mkdir, rmdir, rename, mount) write
// last_cmd_status, with seq_buf printf semantics. Two texts in a row are
// one text: printf of a then b leaves the same bytes as printf of a + b.
inline Error fail(int code, std::string text) { return Error::make(code, std::move(text)); }

// A write buffer as handlers that require a trailing newline see it: the
// newline dropped, then cut at the first NUL (C-string semantics).
inline std::string_view kstr_cut(std::string_view data) {
  data.remove_suffix(1);
  size_t nul = data.find('\0');
  return nul == std::string_view::npos ? data : data.substr(0, nul);
}

// The file table.
const std::vector<FileRow>& file_table();

// A tasks file's text (daemon ids, one per line) as a reader in another
// pid namespace sees it: its ids, ascending, without the threads it cannot
// see.
std::string task_ids_as_seen(std::string_view text, PidView& view);

}  // namespace resctrlfs::fs::internal

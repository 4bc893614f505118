// Defines FsImpl, the resctrl model behind fs::Filesystem: the node table
// (integer inodes with lookup counts), the rdtgroups, the file table rows,
// the CLOSID/RMID pools, per-thread tags, per-CPU associations, the
// monitoring state (MBM rates for mba_sc, ABMC counters) and
// last_cmd_status. Internal to fs/; the methods are split over several .cc
// files along the kernel's seams (tree, groups, ctrl files, info files,
// monitoring, state).
//
// Locking: every public entry point takes mu_ (the rdtgroup_mutex analogue)
// and calls only the unlocked helpers below; helpers assume mu_ is held.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/filesystem.h"
#include "fs/pools.h"
#include "hw/arch.h"
#include "schemata/schemata.h"

namespace resctrlfs::fs::internal {

// The kernel's RFTYPE_* flags: a directory gets every file row whose flags
// are all in the directory's set.
enum RfFlag : uint32_t {
  kInfo = 1U << 0,
  kBase = 1U << 1,
  kCtrl = 1U << 2,
  kMon = 1U << 3,
  kTop = 1U << 4,
  kResCache = 1U << 5,
  kResMb = 1U << 6,
  kDebug = 1U << 7,
  kAssignConfig = 1U << 8,
  kResPerfPkg = 1U << 9,
};

enum class NodeKind : uint8_t {
  kGroupDir,      // the root, a CTRL_MON or a MON group directory
  kMonGroups,     // <group>/mon_groups
  kMonData,       // <group>/mon_data
  kMonDomain,     // <group>/mon_data/mon_L3_XX, mon_sub_L3_YY under it (SNC), mon_PERF_PKG_XX
  kInfo,          // info
  kInfoRes,       // info/<schema>
  kInfoMon,       // info/L3_MON, info/PERF_PKG_MON
  kEventConfigs,  // info/L3_MON/event_configs
  kEventConfig,   // info/L3_MON/event_configs/<event>
  kFile,          // a row of the file table
  kEventFile,     // mon_data/mon_L3_XX/<event>
};

enum class GroupType : uint8_t { kCtrlMon, kMon };

// A pseudo-locked region whose cache domain went offline.
inline constexpr int kNoDomain = -1;

struct Group {
  GroupType type = GroupType::kCtrlMon;
  std::string name;         // directory name; empty for the default group
  Group* parent = nullptr;  // MON groups: their CTRL_MON group
  uint32_t closid = 0;
  uint32_t rmid = 0;
  schemata::GroupMode mode = schemata::GroupMode::SHAREABLE;
  CpuMask cpus;
  std::vector<Group*> mon_children;  // CTRL_MON groups only
  hw::EventId mba_event = hw::EventId::MBM_LOCAL;
  Ino dir = 0;
  Ino mon_groups_dir = 0;
  // ABMC: counter id per (monitoring domain, event).
  std::map<std::pair<int, hw::EventId>, unsigned> cntrs;
  // The region of a PSEUDO_LOCKED group. Its CLOSID went back to the pool
  // when it was locked; `closid` keeps the old number, as the kernel's group
  // does, but nothing may match on it any more.
  struct LockedRegion {
    int schema = -1;  // index into the SchemaList
    int domain = -1;  // control domain id; kNoDomain once the domain went away
    uint32_t cbm = 0;
  };
  std::optional<LockedRegion> plr;
  // Where FsImpl::groups_ holds this group, so that removing it does not
  // search the list.
  std::list<std::unique_ptr<Group>>::iterator pos;
};

// A schema's resource and CDP half as hw/ names them (schemata/ numbers
// them the same way).
inline hw::ResourceId rid_of(const schemata::Schema& s) {
  return static_cast<hw::ResourceId>(s.resource_index);
}
inline hw::ConfType hw_type(schemata::ConfType t) { return static_cast<hw::ConfType>(t); }

class FsImpl;
class TextOut;  // fs/state.cc
struct Node;
using ShowFn = Result<std::string> (FsImpl::*)(const Node&);
using WriteFn = Result<void> (FsImpl::*)(Node&, std::string_view, const Caller&);
using CondFn = bool (FsImpl::*)() const;

struct FileRow {
  const char* name;
  uint32_t mode;   // permission bits
  uint32_t flags;  // RfFlag set required of the directory
  ShowFn show;
  WriteFn write;    // null: the kernel's generic writer answers EINVAL
  CondFn cond;      // null: always present when the flags match
  bool group_file;  // access goes through the group lock (clears LCS on tip)
};

// A directory's entries, sorted by name, in a flat vector: most
// directories hold a handful of entries, made and removed together with
// their group, and a node map allocated an entry and a key per file. Counts
// the entries that are directories, for st_nlink.
class ChildMap {
 public:
  struct Entry {
    std::string name;
    Ino ino = 0;
    bool dir = false;
  };
  using const_iterator = std::vector<Entry>::const_iterator;
  const_iterator begin() const { return v_.begin(); }
  const_iterator end() const { return v_.end(); }
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  uint32_t subdirs() const { return subdirs_; }
  // The inode of `name`, or 0.
  Ino find(std::string_view name) const;
  // Adds `name`, or points it at `ino` if present.
  void insert(std::string_view name, Ino ino, bool dir);
  // Removes `name` if it names `ino` (whatever it names when ino is 0).
  void erase(std::string_view name, Ino ino = 0);
  // Empties the map, keeping its memory.
  void clear();
  void swap(ChildMap& o) noexcept {
    v_.swap(o.v_);
    std::swap(subdirs_, o.subdirs_);
  }

 private:
  static bool before(const Entry& e, std::string_view name);
  std::vector<Entry>::iterator lower(std::string_view name);
  std::vector<Entry> v_;
  uint32_t subdirs_ = 0;
};

struct Node {
  Ino ino = 0;
  Ino parent = 0;
  std::string name;
  NodeKind kind = NodeKind::kFile;
  uint32_t mode = 0;  // with S_IFDIR / S_IFREG
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtime = 0;
  int64_t ctime = 0;
  const FileRow* row = nullptr;
  Group* group = nullptr;  // group dirs and everything under them
  int schema = -1;         // index into the SchemaList (info/<schema> and its files)
  int domain = -1;         // monitoring domain id (with mon_sum: the L3 cache id)
  bool mon_sum = false;    // SNC mon_L3_XX: sum the node domains of L3 `domain`
  // The monitor resource of info/<RES>_MON, mon_<RES>_XX and their files.
  hw::ResourceId mon_rid = hw::ResourceId::L3;
  hw::EventId event = hw::EventId::LLC_OCCUPANCY;
  ChildMap children;
  uint64_t nlookup = 0;
  bool removed = false;
  bool is_dir() const { return kind != NodeKind::kFile && kind != NodeKind::kEventFile; }
};

// info/last_cmd_status: the kernel's 512-byte seq_buf, with its partial
// printf and all-or-nothing puts semantics and the [truncated] marker.
class LastCmdStatus {
 public:
  void clear() { len_ = 0; }
  // seq_buf_puts: the whole string or nothing (then overflowed).
  void puts(std::string_view s);
  // seq_buf_printf: as much as fits (then overflowed).
  void printf(std::string_view s);
  std::string show() const;
  bool empty() const { return len_ == 0; }

 private:
  static constexpr size_t kSize = 512;
  char buf_[kSize] = {};
  size_t len_ = 0;  // kSize + 1 once overflowed
};

// What a monitoring read produced.
enum class ReadState : uint8_t { kValue, kError, kUnavailable, kUnassigned };
struct EventRead {
  ReadState state = ReadState::kValue;
  uint64_t bytes = 0;
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
  std::string status_json() override;
  Result<void> cpu_offline(unsigned cpu) override;
  Result<void> cpu_online(unsigned cpu) override;
  std::string save_state_json() override;
  std::string take_state_snapshot_json() override;
  std::optional<std::string> take_state_delta_json() override;
  Result<void> restore_state_json(const std::string& json) override;
  // restore_state_json() under mu_, without its last-guard try.
  Result<void> restore_state_locked(const std::string& text);
  std::string save_boot_state_json() override;
  Result<void> restore_boot_state_json(const std::string& json) override;
  // restore_boot_state_json() under mu_, without its last-guard try.
  Result<void> restore_boot_state_locked(const std::string& text);

  // ---- file table callbacks (public so the static table can name them) ----
  // Group files (ctrl_files.cc, groups.cc).
  Result<std::string> show_tasks(const Node& n);
  Result<void> write_tasks(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_cpus(const Node& n);
  Result<std::string> show_cpus_list(const Node& n);
  Result<void> write_cpus(Node& n, std::string_view data, const Caller& c);
  Result<void> write_cpus_list(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_schemata(const Node& n);
  Result<void> write_schemata(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_mode(const Node& n);
  Result<void> write_mode(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_size(const Node& n);
  Result<std::string> show_mba_mbps_event(const Node& n);
  Result<void> write_mba_mbps_event(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_ctrl_hw_id(const Node& n);
  Result<std::string> show_mon_hw_id(const Node& n);
  Result<std::string> show_mbm_l3_assignments(const Node& n);
  Result<void> write_mbm_l3_assignments(Node& n, std::string_view data, const Caller& c);
  // Info files (info_files.cc).
  Result<std::string> show_last_cmd_status(const Node& n);
  Result<std::string> show_num_closids(const Node& n);
  Result<std::string> show_cbm_mask(const Node& n);
  Result<std::string> show_min_cbm_bits(const Node& n);
  Result<std::string> show_shareable_bits(const Node& n);
  Result<std::string> show_bit_usage(const Node& n);
  Result<std::string> show_sparse_masks(const Node& n);
  Result<std::string> show_min_bandwidth(const Node& n);
  Result<std::string> show_bandwidth_gran(const Node& n);
  Result<std::string> show_delay_linear(const Node& n);
  Result<std::string> show_thread_throttle_mode(const Node& n);
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

  // Row conditions.
  bool cond_throttle_mode() const;
  bool cond_mba_sc() const { return opts_.mba_mbps; }
  bool cond_abmc() const { return info_.mon.abmc; }
  bool cond_bmec_total() const;
  bool cond_bmec_local() const;
  bool cond_io_alloc() const;
  // io_alloc (io_alloc.cc).
  Result<std::string> show_io_alloc(const Node& n);
  Result<void> write_io_alloc(Node& n, std::string_view data, const Caller& c);
  Result<std::string> show_io_alloc_cbm(const Node& n);
  Result<void> write_io_alloc_cbm(Node& n, std::string_view data, const Caller& c);

 private:
  friend class GroupCbmPolicy;

  // ---- tree (tree.cc) ----
  Node* node(Ino ino);
  Node* child(Node* dir, std::string_view name);
  Node* add_node(Node* parent, std::string name, NodeKind kind, uint32_t mode, uid_t uid,
                 gid_t gid);
  // Marks `n` and its subtree removed, detaches it from its parent and
  // frees nodes nobody references. `notify`: tell the kernel (the change was
  // not named by the request).
  void remove_node(Node* n, bool notify);
  // Drops `ino` from the node table, keeping its Node for reuse.
  void release_node(Ino ino);
  void add_file_rows(Node* dir, uint32_t flags, uid_t uid, gid_t gid);
  // Adds/removes rows of `dir` whose condition changed (BMEC visibility).
  void sync_file_rows(Node* dir, uint32_t flags);
  Attr attr_of(const Node& n) const;
  Result<std::string> render_node(const Node& n);
  uint32_t group_flags(const Group& g) const;
  void build_group_dir(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid);
  void build_mon_data(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid);
  // One mon_<RES>_<id> directory and its event files under `mon_data`,
  // which lends it mode and owner; under SNC the node's mon_sub_L3_<node>
  // below its L3's directory (made first if absent). Returns the topmost
  // node created.
  Node* build_mon_domain(Node* mon_data, int domain_id);
  Node* build_perf_pkg_domain(Node* mon_data, int package_id);  // mon_PERF_PKG_XX
  void build_info_tree();
  Group* group_of(const Node& n) const;  // null for info nodes
  int64_t now_seconds() const;

  // ---- groups (groups.cc) ----
  Result<Attr> mkdir_ctrl_mon(Node* parent, std::string_view name, uint32_t mode,
                              const Caller& caller);
  Result<Attr> mkdir_mon(Node* parent, std::string_view name, uint32_t mode, const Caller& caller);
  Result<void> rmdir_ctrl(Group* g);
  // rename: whether the kernel finds private data behind `n`
  // (kernfs_to_rdtgroup()); without it a rename fails with ENOENT.
  bool rename_has_priv(const Node& n) const;
  Result<void> rmdir_mon(Group* g);
  void destroy_group(Group* g);  // frees ids and the struct (no task/cpu moves)
  Group* new_group();
  bool is_root(const Group* g) const { return g == root_; }
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
  Group* cpu_ctrl(unsigned cpu) const { return cpu_ctrl_[cpu] != nullptr ? cpu_ctrl_[cpu] : root_; }
  std::pair<uint32_t, uint32_t> thread_tags(pid_t tid) const;
  void set_thread(pid_t tid, uint32_t closid, uint32_t rmid);
  // Forgets a thread's tags (exit, fork from an untagged parent); whether
  // it had any.
  bool erase_thread(pid_t tid);
  // The thread indexes by CLOSID and by RMID follow thread_tags_.
  void index_thread(pid_t tid, std::pair<uint32_t, uint32_t> old_tags,
                    std::pair<uint32_t, uint32_t> new_tags);
  void rebuild_thread_index();
  // Moves every thread of `from` (CLOSID match for CTRL_MON, RMID match for
  // MON) to `to`'s tags.
  void move_group_tasks(const Group* from, const Group* to);
  // The tagged threads carrying `closid`, or null when none.
  const std::unordered_set<pid_t>* threads_of_closid(uint32_t closid) const;
  Result<void> move_task(pid_t pid, Group* g, const Caller& c);
  Result<void> write_cpus_common(Node& n, std::string_view data, bool list);
  Result<void> fail(int code, std::string_view msg);  // appends msg to LCS

  // ---- ctrl files (ctrl_files.cc) ----
  uint32_t ctrl_value(int schema, int domain, uint32_t closid) const;
  bool cbm_overlaps(const schemata::Schema& s, int domain, uint32_t cbm, uint32_t closid,
                    bool exclusive_only) const;
  Result<void> init_alloc(Group* g);  // new group's default values (§4.3)
  // A new CLOSID's mask on one domain of cache schema `s` (§4.3), or nothing
  // when fewer than min_cbm_bits bits are left.
  std::optional<uint32_t> default_cbm(const schemata::Schema& s, int domain, uint32_t closid) const;
  // The checks a schemata write of group `g` applies to a cache mask.
  std::unique_ptr<schemata::CbmPolicy> cbm_policy(const Group& g);
  const Group* ctrl_group_by_closid(uint32_t closid) const;
  // Calls f(const Group&) for the default group, then each CTRL_MON group
  // (the group directories of the root), until f returns true; whether one
  // did. A walk of groups_ would visit every MON group too.
  template <typename F>
  bool any_ctrl_group(F f) const {
    if (root_ == nullptr) return false;
    if (f(*root_)) return true;
    if (root_node_ == nullptr) return false;
    for (const ChildMap::Entry& e : root_node_->children) {
      if (!e.dir) continue;
      auto it = nodes_.find(e.ino);
      if (it == nodes_.end()) continue;
      const Node& n = *it->second;
      if (n.kind != NodeKind::kGroupDir || n.group == nullptr || n.group == root_) continue;
      if (f(*n.group)) return true;
    }
    return false;
  }

  // ---- io_alloc (io_alloc.cc) ----
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
  // ---- cache pseudo-locking (pseudo_lock.cc) ----
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

  // ---- monitoring (monitor.cc) ----
  // Any monitor resource (L3 or telemetry): groups get mon_data/mon_groups.
  bool mon_capable() const { return info_.mon.capable || info_.perf_pkg.capable; }
  bool alloc_capable() const;
  bool event_enabled(hw::EventId ev) const;
  bool is_mbm(hw::EventId ev) const {
    return ev == hw::EventId::MBM_TOTAL || ev == hw::EventId::MBM_LOCAL;
  }
  EventRead read_one(const Group* g, int domain, hw::EventId ev);
  EventRead read_group(const Group* g, int domain, hw::EventId ev);
  // SNC: read_group summed over the node domains sharing L3 cache `l3_id`.
  EventRead read_group_l3_sum(const Group* g, int l3_id, hw::EventId ev);
  Result<std::string> show_event_file(const Node& n);
  void reset_group_mbm(const Group* g);  // the "first" read at mon_data creation
  void assign_cntrs_on_mkdir(Group* g);
  Result<void> assign_cntr(Group* g, int domain, hw::EventId ev);
  void unassign_cntr(Group* g, int domain, hw::EventId ev);
  void unassign_all_cntrs(Group* g);
  Result<void> set_assign_mode(bool mbm_event);
  unsigned free_cntrs(int domain) const;
  void limbo_pass();
  void overflow_pass(double elapsed_ms);
  void free_rmid(uint32_t rmid);
  hw::EventId default_mba_event() const;
  Result<void> write_bmec(Node& n, std::string_view data, hw::EventId ev);
  Result<std::string> show_bmec(hw::EventId ev) const;

  // ---- CPU hotplug (hotplug.cc): the ArchEvents up-calls ----
  friend class HotplugEvents;
  void ctrl_domain_gone(hw::ResourceId rid, int domain_id);
  void ctrl_domain_back(hw::ResourceId rid, int domain_id);
  void mon_domain_gone(int domain_id);
  void mon_domain_back(int domain_id);
  void perf_pkg_domain_gone(int package_id);
  void perf_pkg_domain_back(int package_id);

  // ---- journal deltas (state.cc) ----
  // What changed in the saved state since the last take_state_*(): the
  // groups to write again, the groups removed and the threads whose tags
  // changed, or "everything" (jr_full_) when a change is not one of those
  // kinds, or too many to be worth listing. Marks are recorded only while
  // jr_full_ is false, so a daemon without a journal (which never takes
  // them) pays one branch per change.
  using GroupKey = std::pair<std::string, std::string>;  // (CTRL_MON name, MON name or "")
  static GroupKey group_key(const Group& g);
  void jr_group(const Group* g);
  void jr_gone(const GroupKey& k);
  void jr_thread(pid_t tid);
  void jr_all() { jr_full_ = true; }
  void jr_reset();
  void jr_after_write(const Node& n);
  Group* group_by_key(const GroupKey& k);
  // One group's object of the state document (see state.cc), appended to
  // `out`; a CTRL_MON group with or without its "mon_groups".
  void save_ctrl_state(const Group& g, bool with_mons, TextOut& out);
  void save_mon_state(const Group& m, TextOut& out);
  void save_dir_fields(const Group& g, TextOut& out);
  std::string save_state_locked();
  bool jr_full_ = true;
  std::vector<GroupKey> jr_set_;
  std::set<GroupKey> jr_set_seen_;
  std::set<GroupKey> jr_del_;
  std::unordered_set<pid_t> jr_threads_;

  // ---- state ----
  std::mutex mu_;
  hw::Arch* arch_;
  TaskSource* tasks_;
  InvalidationSink* inval_;
  uid_t mount_uid_;
  gid_t mount_gid_;
  const hw::PlatformInfo& info_;

  // Survives unmount (§6.4).
  unsigned max_name_width_ = 0;
  uint32_t threshold_ = 0;
  RmidPool rmids_;
  bool mbm_event_mode_ = false;
  bool assign_on_mkdir_ = false;
  uint32_t event_filter_total_ = 0;
  uint32_t event_filter_local_ = 0;
  LastCmdStatus lcs_;
  std::optional<std::chrono::steady_clock::time_point> last_tick_;

  // Per mount.
  bool mounted_ = false;
  MountOptions opts_;
  schemata::SchemaList schemas_;
  ClosidPool closids_;
  std::list<std::unique_ptr<Group>> groups_;  // root first
  Group* root_ = nullptr;
  std::unordered_map<pid_t, std::pair<uint32_t, uint32_t>> thread_tags_;
  // Tagged threads by CLOSID and by RMID (the keys a group's threads are
  // matched on), so that moving a group's threads costs its threads.
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> closid_threads_;
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> rmid_threads_;
  std::vector<std::pair<uint32_t, uint32_t>> cpu_assoc_;  // last programmed
  std::vector<bool> cpu_assoc_valid_;
  std::vector<unsigned> cpu_assoc_failed_;  // CPUs whose last write failed
  // Per CPU: its CTRL_MON group (null: the default group) and the MON group
  // of that group monitoring it (null: none).
  std::vector<Group*> cpu_ctrl_;
  std::vector<Group*> cpu_mon_;
  std::map<std::pair<int, uint32_t>, uint32_t> mbps_target_;  // (domain, closid)
  std::map<std::pair<const Group*, int>, uint64_t> mba_prev_bytes_;
  // ABMC: owner of each counter per monitoring domain (index = counter id).
  std::map<int, std::vector<std::optional<std::pair<Group*, hw::EventId>>>> cntr_owner_;

  // Nodes.
  std::unordered_map<Ino, std::unique_ptr<Node>> nodes_;
  Ino next_ino_ = kRootIno + 1;
  // Nodes released by remove_node/forget, reused by add_node (with their
  // name and children capacity) instead of allocated again.
  std::vector<std::unique_ptr<Node>> spare_nodes_;
  Node* root_node_ = nullptr;
  Ino info_ino_ = 0;
  Ino info_mon_ino_ = 0;
};

// A write buffer as handlers that require a trailing newline see it: the
// newline dropped, then cut at the first NUL (C-string semantics).
inline std::string_view kstr_cut(std::string_view data) {
  data.remove_suffix(1);
  size_t nul = data.find('\0');
  return nul == std::string_view::npos ? data : data.substr(0, nul);
}

// The file table.
const std::vector<FileRow>& file_table();

// A telemetry value with `binary_bits` fraction bits as resctrl prints it:
// "<integer>.<fraction>\n", the fraction rounded to nearest with
// ceil(binary_bits * log10(2)) digits (one digit when binary_bits is 0).
std::string format_fixed_point(uint64_t val, unsigned binary_bits);

}  // namespace resctrlfs::fs::internal

// Defines the resctrl model's data: the kernel's RFTYPE flags, the node
// kinds of the tree, an rdtgroup (Group), a file table row (FileRow), a
// directory's entries (ChildMap), a node of the tree (Node) and the
// last_cmd_status buffer. Internal to fs/.
#pragma once

#include <sys/stat.h>

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
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
  // CTRL_MON groups only: their MON groups in creation order. A list, so
  // that an rmdir takes its MON group out through mon_pos instead of
  // searching every sibling (and removing a CTRL_MON group with n MON
  // groups is not n searches); attach_mon / detach_mon keep both in step.
  std::list<Group*> mon_children;
  std::list<Group*>::iterator mon_pos;  // MON groups: their place in parent->mon_children
  hw::EventId mba_event = hw::EventId::MBM_LOCAL;
  Ino dir = 0;
  Ino mon_groups_dir = 0;
  // The high bits of the inode numbers of this group's directory and the
  // files under it (fs/node_table.h); 0 for the default group. Given at
  // mkdir, never reused while the journal lasts, kept by the journal, so a
  // daemon that takes a mount over numbers every file as its predecessor did.
  uint32_t node_base = 0;
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
  // Where Model::groups holds this group, so that removing it does not
  // search the list.
  std::list<std::unique_ptr<Group>>::iterator pos;
};

// MON group `m` joins `parent`'s MON groups, last; detach_mon takes it out.
inline void attach_mon(Group* parent, Group* m) {
  m->parent = parent;
  m->mon_pos = parent->mon_children.insert(parent->mon_children.end(), m);
}
inline void detach_mon(Group* m) { m->parent->mon_children.erase(m->mon_pos); }

// A schema's resource and CDP half as hw/ names them (schemata/ numbers
// them the same way).
inline hw::ResourceId rid_of(const schemata::Schema& s) {
  return static_cast<hw::ResourceId>(s.resource_index);
}
inline hw::ConfType hw_type(schemata::ConfType t) { return t; }  // one type (base/conf_type.h)

class TextOut;  // fs/state.cc
struct Node;
struct Parts;  // fs/parts.h
// A row's handlers: thunks to a member function of the part that owns the
// file (show_fn, write_fn, cond_fn in fs/parts.h).
using ShowFn = Result<std::string> (*)(Parts&, const Node&);
// A show whose text is cached: the cached buffer itself, shared.
using ShowSharedFn = Result<std::shared_ptr<const std::string>> (*)(Parts&, const Node&);
using WriteFn = Result<void> (*)(Parts&, Node&, std::string_view, const Caller&);
using CondFn = bool (*)(Parts&);
// A check the kernel makes before it takes rdtgroup_mutex: true refuses the
// write with EINVAL and leaves last_cmd_status as it was.
using RefuseFn = bool (*)(std::string_view data);

// What a write (done, or failed part way) changes in the saved state, so
// that the journal records it: the whole document (info settings, and any
// row that does not say otherwise), the group the file belongs to, or what
// the handler marked itself (tasks marks thread by thread, cpus every
// group whose CPUs moved).
enum class Changes : uint8_t { kAll, kGroup, kMarkedByHandler };

// One resctrl file. Rows are written with designated initialisers; a field
// left out takes the default below.
struct FileRow {
  const char* name = nullptr;
  uint32_t mode = 0;   // permission bits
  uint32_t flags = 0;  // RfFlag set required of the directory
  ShowFn show = nullptr;
  // When set, render_shared() calls it instead of wrapping show's text.
  ShowSharedFn show_shared = nullptr;
  WriteFn write = nullptr;  // null: the kernel's generic writer answers EINVAL
  CondFn cond = nullptr;    // null: always present when the flags match
  // A read clears last_cmd_status and a failed read leaves its text there
  // (group files, and info files whose show calls rdt_last_cmd_clear()).
  bool read_status = false;
  // Writes always clear last_cmd_status once past this check.
  RefuseFn refuse_unlocked = nullptr;
  Changes changes = Changes::kAll;
  // The file lists and takes thread ids (tasks): they are translated for
  // a caller in another pid namespace (PidView).
  bool task_ids = false;
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
  // FNV-1a of the node's path below its group's directory (the low bits of
  // its inode number; fs/node_table.h), and that group's node_base.
  uint64_t path_hash = 0;
  uint32_t node_base = 0;
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

}  // namespace resctrlfs::fs::internal

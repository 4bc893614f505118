// Implements the rdtgroup life cycle: the Model and FsImpl construction,
// FsImpl's mount/unmount/mkdir/rmdir/rename entry points and the Groups
// part behind them (mount and unmount, mkdir/rmdir/rename of CTRL_MON and
// MON groups).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>
#include <string>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

using hw::EventId;
using hw::ResourceId;

Model::Model(const FilesystemConfig& cfg)
    : arch(cfg.arch),
      tasks(cfg.tasks),
      inval(cfg.inval),
      mount_uid(cfg.mount_uid),
      mount_gid(cfg.mount_gid),
      info(cfg.arch->info()) {
  root_node = nodes.make_root(mount_uid, mount_gid, now_seconds());
}

int64_t Model::now_seconds() { return static_cast<int64_t>(std::time(nullptr)); }

void Model::set_status(std::string_view text) { lcs.printf(text); }

bool in_mount(const hw::Resource& r, const MountOptions& opts) {
  return r.alloc_capable && (r.mount_option == nullptr || opts.resource_option(r.mount_option));
}

bool Model::alloc_capable() const {
  for (const hw::Resource& r : info.resources)
    if (in_mount(r, opts)) return true;
  return false;
}

bool Model::event_enabled(EventId ev) const {
  if (!info.res(hw::ResourceId::L3).mon.capable) return false;
  for (EventId e : info.res(hw::ResourceId::L3).mon.event_ids())
    if (e == ev) return true;
  return false;
}

EventId Model::default_mba_event() const {
  return event_enabled(EventId::MBM_LOCAL) ? EventId::MBM_LOCAL : EventId::MBM_TOTAL;
}

// Each part gets the model and the parts it calls (fs/parts.h); none is
// used before all are built.
FsImpl::FsImpl(const FilesystemConfig& cfg)
    : m_(cfg),
      p_{tree_, groups_, cpus_, ctrl_, info_files_, mon_, io_alloc_, plock_, io_ch_, m_},
      rows_(p_),
      tree_(m_, io_ch_, rows_),
      groups_(m_, tree_, cpus_, ctrl_, io_alloc_, io_ch_, mon_, plock_),
      cpus_(m_, plock_),
      ctrl_(m_, mon_, plock_),
      info_files_(m_),
      mon_(m_, tree_, io_ch_),
      io_alloc_(m_, ctrl_),
      plock_(m_, mon_),
      io_ch_(m_) {
  m_.model_mu = &mu_;
  m_.cmd_mu = &cmd_mu_;
}

FsImpl::~FsImpl() = default;

Group* Groups::new_group() {
  m_.groups.push_back(std::make_unique<Group>());
  Group* g = m_.groups.back().get();
  g->pos = std::prev(m_.groups.end());
  g->cpus = CpuMask(m_.info.nr_cpus);
  return g;
}

// ---------------------------------------------------------------------------
// mount / unmount

Result<void> FsImpl::mount(const MountOptions& opts) {
  CommandLock lock(*this);
  return p_.groups.mount_locked(opts);
}

// Whether the machine and `opts` allow a mount (the kernel's
// rdt_get_tree() and its option parsing refuse the same way).
Result<void> Groups::check_mount(const MountOptions& opts) const {
  if (m_.mounted) return Error::make(EBUSY, "resctrl is already mounted");
  // Our resource options first: each names a resource the machine must have.
  for (const MountOptionRow& o : kMountOptions) {
    if (o.kind != MountOptionKind::kResource || !(opts.*(o.flag))) continue;
    bool have = false;
    for (const hw::Resource& r : m_.info.resources)
      have = have || (r.alloc_capable && r.mount_option != nullptr &&
                      std::string_view(r.mount_option) == o.name);
    if (!have) return Error::make(ENODEV, mount_option_missing(o.flag));
  }
  bool any_alloc = false;
  for (const hw::Resource& r : m_.info.resources) any_alloc = any_alloc || in_mount(r, opts);
  if (!any_alloc && !m_.mon_capable()) {
    // Ours (the kernel has no such options): name what would show a tree.
    std::string hint;
    for (const hw::Resource& r : m_.info.resources)
      if (r.alloc_capable && r.mount_option != nullptr && hint.empty())
        hint = std::string("; this machine's ") + hw::resource_name(r.rid) +
               " allocation is ours: mount with -o " + r.mount_option;
    return Error::make(ENODEV, "no RDT allocation or monitoring capability" + hint);
  }
  const hw::Resource& l3 = m_.info.res(ResourceId::L3);
  const hw::Resource& l2 = m_.info.res(ResourceId::L2);
  const hw::Resource& mb = m_.info.res(ResourceId::MB);
  if (opts.cdp && !(l3.alloc_capable && l3.cache.cdp_capable))
    return Error::make(EINVAL, "cdp: L3 is not CDP capable");
  if (opts.cdpl2 && !(l2.alloc_capable && l2.cache.cdp_capable))
    return Error::make(EINVAL, "cdpl2: L2 is not CDP capable");
  if (opts.mba_mbps) {
    bool mbm = m_.event_enabled(EventId::MBM_LOCAL) || m_.event_enabled(EventId::MBM_TOTAL);
    // Under SNC the monitoring scope is the NUMA node, not MBA's L3.
    bool same_scope = m_.info.res(hw::ResourceId::L3).mon.snc_ways <= 1;
    if (mb.alloc_capable) {
      for (const hw::CtrlDomain& d : mb.ctrl_domains) {
        bool found = false;
        for (const hw::MonDomain& m : m_.info.res(hw::ResourceId::L3).mon.mon_domains)
          found = found || m.id == d.id;
        same_scope = same_scope && found;
      }
    }
    if (!(mbm && mb.alloc_capable && mb.membw.delay_linear && same_scope &&
          !m_.info.res(hw::ResourceId::L3).mon.cntr_assign.capable))
      return Error::make(EINVAL,
                         "mba_MBps requires MBM (mbm_event mode not supported) and linear scale "
                         "MBA at L3 scope");
  }
  return io_ch_.check_mount(opts);
}

// The schema list for `opts` and the CLOSID pool (the smallest
// num_closids of the schemas).
void Groups::build_schemas(const MountOptions& opts) {
  std::vector<schemata::ResourceDesc> descs;
  for (int i = 0; i < hw::kNumResources; ++i) {
    const hw::Resource& r = m_.info.resources[i];
    if (!in_mount(r, opts)) continue;
    schemata::ResourceDesc d;
    d.name = hw::resource_name(r.rid);
    d.resource_index = i;
    d.kind = r.is_bitmap() ? schemata::Kind::CACHE : schemata::Kind::BANDWIDTH;
    d.cdp_capable = r.is_bitmap() && r.cache.cdp_capable;
    d.cdp_enabled =
        (r.rid == ResourceId::L3 && opts.cdp) || (r.rid == ResourceId::L2 && opts.cdpl2);
    d.num_closid = r.num_closid;
    d.cbm_len = r.cache.cbm_len;
    d.shareable_bits = r.cache.shareable_bits;
    d.min_cbm_bits = r.cache.min_cbm_bits;
    d.sparse_masks = r.cache.sparse_masks;
    d.cache_size_bytes = r.cache.cache_size_bytes;
    d.min_bw = r.membw.min_bw;
    d.bw_gran = r.membw.bw_gran;
    d.max_bw = r.membw.max_bw;
    d.delay_linear = r.membw.delay_linear;
    d.arch_needs_linear = r.membw.arch_needs_linear;
    d.mba_sc = r.rid == ResourceId::MB && opts.mba_mbps;
    if (r.rid == ResourceId::CB) d.bw_label = "CB";
    d.extension = r.mount_option != nullptr;
    for (const hw::CtrlDomain& cd : r.ctrl_domains) d.domain_ids.push_back(cd.id);
    descs.push_back(std::move(d));
  }
  m_.schemas = schemata::build_schema_list(descs, m_.max_name_width);
  unsigned nclosid = 0;
  bool first = true;
  for (const schemata::Schema& s : m_.schemas.schemas) {
    if (first || s.num_closid < nclosid) nclosid = s.num_closid;
    first = false;
  }
  m_.closids.init(nclosid);
}

Result<void> Groups::mount_locked(const MountOptions& opts) {
  RESCTRLFS_RETURN_IF_ERROR(check_mount(opts));
  for (ResourceId rid : {ResourceId::L3, ResourceId::L2}) {
    const hw::Resource& r = m_.info.res(rid);
    bool want = rid == ResourceId::L3 ? opts.cdp : opts.cdpl2;
    if (r.alloc_capable && r.cache.cdp_capable && m_.arch->cdp_enabled(rid) != want) {
      if (Result<void> r = m_.arch->set_cdp_enabled(rid, want); !r.ok())
        return worded(std::move(r).error());
    }
  }
  m_.opts = opts;
  build_schemas(opts);

  // Start from a clean machine: default controls, io_alloc off, every CPU
  // and thread in the default group.
  io_alloc_.reset_io_alloc();
  if (Result<void> r = m_.arch->reset_all_ctrls(); !r.ok()) return worded(std::move(r).error());
  mon_.reset_mount_state(true);
  m_.threads.clear();
  cpus_.reset();

  m_.groups.clear();
  m_.root = new_group();
  m_.root->cpus = m_.info.online;
  m_.root->mba_event = m_.default_mba_event();

  m_.root_node->removed = false;
  m_.root_node->mode = S_IFDIR | 0755;
  tree_.build_group_dir(m_.root, m_.root_node, 0755, m_.mount_uid, m_.mount_gid);
  if (Result<void> io = io_ch_.mount(); !io.ok()) {
    // As rdt_get_tree() unwinds a failed mount: nothing stays applied. The
    // unmount path resets the channels, turns tagging and CDP off and drops
    // the group directory built so far.
    m_.mounted = true;
    unmount_locked();
    return io;
  }
  tree_.build_info_tree();
  cpus_.update_cpu_assoc();
  m_.mounted = true;
  if (m_.live.tracking()) (void)rescan_threads();
  m_.changes.all();
  m_.lcs.clear();
  m_.set_status(mon_.assign_cntrs_on_mkdir(m_.root));
  // A daemon that took the machine over continues its predecessor's counts.
  if (!m_.arch->counters_carried_over()) mon_.reset_group_mbm(m_.root);
  return Ok();
}

void FsImpl::unmount() {
  CommandLock lock(*this);
  p_.groups.unmount_locked();
}

void Groups::unmount_locked() {
  if (!m_.mounted) return;
  for (ResourceId rid : {ResourceId::L3, ResourceId::L2}) {
    if (m_.arch->cdp_enabled(rid)) (void)m_.arch->set_cdp_enabled(rid, false);
  }
  io_alloc_.reset_io_alloc();
  io_ch_.unmount();
  (void)m_.arch->reset_all_ctrls();
  if (hw::ThreadTagger* t = m_.arch->thread_tagger()) {
    for (auto& [tid, tags] : m_.threads.all()) t->set_thread_tags(tid, 0, 0);
  }
  m_.threads.clear();
  for (unsigned cpu : m_.info.online.cpus()) (void)m_.arch->set_cpu_assoc(cpu, 0, 0);
  // Every group but the default one goes, its RMID into limbo.
  for (auto& g : m_.groups) {
    mon_.unassign_all_cntrs(g.get());
    const bool locking = g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
                         g->mode == schemata::GroupMode::PSEUDO_LOCKED;
    // A locksetup/locked group gave its RMID up already.
    if (locking) plock_.pseudo_lock_remove(g.get());
    if (g.get() != m_.root && !locking) mon_.free_rmid(g->closid, g->rmid);
  }
  std::vector<Ino> kids;
  for (const ChildMap::Entry& e : m_.root_node->children) kids.push_back(e.ino);
  for (Ino k : kids)
    if (Node* c = m_.nodes.get(k)) m_.nodes.remove(c, nullptr);
  m_.groups.clear();
  m_.root = nullptr;
  cpus_.rebuild_cpu_owners();
  m_.root_node->group = nullptr;
  m_.opts = MountOptions{};
  m_.mounted = false;
  m_.changes.all();
  mon_.reset_mount_state(false);
}

// ---------------------------------------------------------------------------
// mkdir

Result<Attr> FsImpl::mkdir(Ino parent, std::string_view name, uint32_t mode, const Caller& caller) {
  CommandLock lock(*this);
  Node* p = m_.nodes.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  if (!p->is_dir()) return Error::make(ENOTDIR);
  if (name.size() > 255) return Error::make(ENAMETOOLONG);
  if (m_.nodes.child(p, name) != nullptr) return Error::make(EEXIST);
  if (!m_.mounted) return Error::make(ENOENT);
  if (name.find('\n') != std::string_view::npos) return Error::make(EINVAL);
  Result<Attr> r = Error::make(EPERM);
  std::string status;
  if (m_.alloc_capable() && p == m_.root_node) {
    m_.lcs.clear();
    r = p_.groups.mkdir_ctrl_mon(p, name, mode & 07777, caller, status);
  } else if (m_.mon_capable()) {
    // mkdir_rdt_prepare: the parent must belong to a group (info -> ENODEV).
    if (p_.tree.group_of(*p) == nullptr) return Error::make(ENODEV);
    m_.lcs.clear();
    r = p_.groups.mkdir_mon(p, name, mode & 07777, caller, status);
  }
  m_.set_status(status);
  m_.set_status(r);
  if (r.ok()) {
    if (Node* c = m_.nodes.child(p, name)) m_.changes.group(c->group);
  }
  return r;
}

Result<Attr> Groups::mkdir_ctrl_mon(Node* parent, std::string_view name, uint32_t mode,
                                    const Caller& caller, std::string& status) {
  m_.assert_command_locked();
  auto closid = mon_.alloc_closid();
  if (!closid.ok()) return fail(ENOSPC, "Out of CLOSIDs\n");
  uint32_t rmid = 0;
  if (m_.mon_capable()) {
    auto r = mon_.alloc_rmid(*closid);
    if (!r.ok()) {
      m_.closids.free(*closid);
      return fail(r.error().code, "Out of RMIDs\n");
    }
    rmid = *r;
  }
  Group* g = new_group();
  g->type = GroupType::kCtrlMon;
  g->name = std::string(name);
  g->closid = *closid;
  g->rmid = rmid;
  g->mba_event = m_.default_mba_event();
  if (m_.mon_capable()) status = mon_.assign_cntrs_on_mkdir(g);
  Result<void> init = ctrl_.init_alloc(g);
  if (!init.ok()) {
    mon_.unassign_all_cntrs(g);
    if (m_.mon_capable()) mon_.free_rmid(*closid, rmid);
    m_.closids.free(*closid);
    m_.groups.erase(g->pos);
    return std::move(init).error();
  }
  return add_group_dir(g, parent, name, mode, caller);
}

Result<Attr> Groups::mkdir_mon(Node* parent, std::string_view name, uint32_t mode,
                               const Caller& caller, std::string& status) {
  m_.assert_command_locked();
  Group* pg = tree_.group_of(*parent);
  if (parent->kind != NodeKind::kMonGroups || name == "mon_groups") return Error::make(EPERM);
  if (pg->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      pg->mode == schemata::GroupMode::PSEUDO_LOCKED)
    return fail(EINVAL, "Pseudo-locking in progress\n");
  auto r = mon_.alloc_rmid(pg->closid);
  if (!r.ok()) return fail(r.error().code, "Out of RMIDs\n");
  Group* g = new_group();
  g->type = GroupType::kMon;
  g->name = std::string(name);
  g->parent = pg;
  g->closid = pg->closid;
  g->rmid = *r;
  status = mon_.assign_cntrs_on_mkdir(g);
  attach_mon(pg, g);
  return add_group_dir(g, parent, name, mode, caller);
}

Result<Attr> Groups::add_group_dir(Group* g, Node* parent, std::string_view name, uint32_t mode,
                                   const Caller& caller) {
  const bool root_caller = caller.uid == 0 && caller.gid == 0;
  uid_t uid = root_caller ? m_.mount_uid : caller.uid;
  gid_t gid = root_caller ? m_.mount_gid : caller.gid;
  if (g->node_base == 0) g->node_base = m_.nodes.take_base();
  Node* dir = m_.nodes.add(parent, std::string(name), NodeKind::kGroupDir, S_IFDIR | mode, uid, gid,
                           m_.now_seconds(), g->node_base);
  tree_.build_group_dir(g, dir, mode, uid, gid);
  mon_.reset_group_mbm(g);
  ++dir->nlookup;
  return tree_.attr_of(*dir);
}

// ---------------------------------------------------------------------------
// rmdir

void Groups::destroy_group(Group* g) {
  mon_.unassign_all_cntrs(g);
  io_ch_.group_gone(g);
  if (g->type == GroupType::kMon) detach_mon(g);
  // No CPU may stay owned by the group.
  cpus_.forget_owner(g);
  mon_.forget_group(g);
  m_.groups.erase(g->pos);
}

Result<void> FsImpl::rmdir(Ino parent, std::string_view name) {
  CommandLock lock(*this);
  Node* p = m_.nodes.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  Node* n = m_.nodes.child(p, name);
  if (n == nullptr) return Error::make(ENOENT);
  if (!n->is_dir()) return Error::make(ENOTDIR);
  Group* g = p_.tree.group_of(*n);
  if (g == nullptr) return Error::make(EPERM);
  m_.lcs.clear();
  const GroupKey key = group_key(*g);
  if (n->kind == NodeKind::kGroupDir && g->type == GroupType::kCtrlMon && p == m_.root_node &&
      !m_.is_root(g)) {
    const bool had_cpus = !g->cpus.empty();
    RESCTRLFS_RETURN_IF_ERROR(p_.groups.rmdir_ctrl(g));
    m_.changes.gone(key);
    if (had_cpus) m_.changes.group(m_.root);  // took the group's CPUs
  } else if (n->kind == NodeKind::kGroupDir && g->type == GroupType::kMon &&
             p->kind == NodeKind::kMonGroups) {
    RESCTRLFS_RETURN_IF_ERROR(p_.groups.rmdir_mon(g));
    m_.changes.gone(key);
  } else {
    return Error::make(EPERM);
  }
  m_.nodes.remove(n, nullptr);
  return Ok();
}

Result<void> Groups::rmdir_ctrl(Group* g) {
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      g->mode == schemata::GroupMode::PSEUDO_LOCKED) {
    // No tasks, CPUs, MON groups or RMID to give back: just remove it.
    plock_.pseudo_lock_remove(g);
    destroy_group(g);
    return Ok();
  }
  move_group_tasks(g, m_.root);
  m_.root->cpus |= g->cpus;
  // Its CPUs (and its MON groups', a subset) go to the default group.
  const CpuMask touched = g->cpus;
  cpus_.to_default(touched);
  // MON children go with their parent; their entries are not named by the
  // request, so the kernel's dcache is told.
  const std::vector<Group*> kids(g->mon_children.begin(), g->mon_children.end());
  for (Group* m : kids) {
    if (Node* md = m_.nodes.get(m->dir)) m_.nodes.remove(md, m_.inval);
    mon_.free_rmid(m->closid, m->rmid);
    destroy_group(m);
  }
  g->mon_children.clear();
  mon_.free_rmid(g->closid, g->rmid);
  m_.closids.free(g->closid);
  mon_.forget_closid(g->closid);
  destroy_group(g);
  cpus_.update_cpu_assoc(touched);
  return Ok();
}

Result<void> Groups::rmdir_mon(Group* g) {
  m_.assert_command_locked();
  Group* parent = g->parent;
  move_group_tasks(g, parent);
  mon_.free_rmid(g->closid, g->rmid);
  // Its CPUs fall back to the parent's RMID.
  const CpuMask touched = g->cpus;
  destroy_group(g);
  cpus_.update_cpu_assoc(touched);
  return Ok();
}

// ---------------------------------------------------------------------------
// rename (only a MON group, into a mon_groups directory)

bool Groups::rename_has_priv(const Node& n) const {
  // What kernfs_to_rdtgroup() finds: a directory's own private data, except
  // for info and its direct subdirectories (none); a file's parent's
  // private data. info/<schema>, info/<RES>_MON and event_configs/<event>
  // carry their schema, resource or event there; info and event_configs
  // nothing; group directories, mon_groups, mon_data and its domain
  // directories their group.
  auto dir_priv = [this](const Node& d) {
    switch (d.kind) {
      case NodeKind::kInfo:
      case NodeKind::kEventConfigs:
        return false;
      case NodeKind::kInfoRes:
      case NodeKind::kInfoMon:
      case NodeKind::kEventConfig:
        return true;
      default:
        return tree_.group_of(d) != nullptr;
    }
  };
  if (n.is_dir()) {
    if (n.kind == NodeKind::kInfo || n.kind == NodeKind::kInfoRes || n.kind == NodeKind::kInfoMon)
      return false;
    return dir_priv(n);
  }
  const Node* parent = m_.nodes.get(n.parent);
  return parent != nullptr && dir_priv(*parent);
}

Result<void> FsImpl::rename(Ino parent, std::string_view name, Ino newparent,
                            std::string_view newname, unsigned flags) {
  CommandLock lock(*this);
  if (flags != 0) return Error::make(EINVAL);
  Node* p = m_.nodes.get(parent);
  Node* np = m_.nodes.get(newparent);
  if (p == nullptr || np == nullptr || p->removed || np->removed) return Error::make(ENOENT);
  Node* src = m_.nodes.child(p, name);
  if (src == nullptr) return Error::make(ENOENT);
  if (newname.size() > 255) return Error::make(ENAMETOOLONG);
  // The kernel's rdtgroup_rename (fs/resctrl/rdtgroup.c) first maps both
  // nodes to their private data with kernfs_to_rdtgroup(): nothing for info
  // and its direct subdirectories -> ENOENT, LCS untouched. Then it takes
  // the lock, clears last_cmd_status, and only then refuses a file.
  if (!p_.groups.rename_has_priv(*src) || !p_.groups.rename_has_priv(*np))
    return Error::make(ENOENT);
  m_.lcs.clear();
  Result<void> r = p_.groups.rename_locked(p, src, np, newname);
  m_.set_status(r);
  return r;
}

Result<void> Groups::rename_locked(Node* p, Node* src, Node* np, std::string_view newname) {
  m_.assert_command_locked();
  if (!src->is_dir() || !np->is_dir()) {
    // The one kernel message without a trailing newline (the kernel puts
    // it; from a cleared status printf leaves the same bytes).
    return fail(EPERM, "Source and destination must be directories");
  }
  Group* g = tree_.group_of(*src);
  Group* new_parent_group = tree_.group_of(*np);
  if (g == nullptr) return fail(EPERM, "Source must be a MON group\n");
  if (src->kind != NodeKind::kGroupDir || g->type != GroupType::kMon ||
      p->kind != NodeKind::kMonGroups)
    return fail(EPERM, "Source must be a MON group\n");
  if (np->kind != NodeKind::kMonGroups || newname == "mon_groups")
    return fail(EPERM, "Destination must be a mon_groups subdirectory\n");
  if (!g->cpus.empty() && g->parent != new_parent_group)
    return fail(EPERM, "Cannot move a MON group that monitors CPUs\n");
  if (Node* existing = m_.nodes.child(np, newname)) {
    if (existing == src) return Ok();
    return Error::make(EEXIST);
  }
  // The kernel's mongrp_reparent keeps the RMID and takes the new parent's
  // CLOSID. Where the RMID depends on the CLOSID that is another index,
  // which must be the group's alone: the same RMID of the new CLOSID if
  // free, else another of its free ones; none -> refused as mkdir there
  // would be (ours: the kernel shares the index with its holder).
  const bool reparent = g->parent != new_parent_group;
  const uint32_t old_closid = g->closid, old_rmid = g->rmid;
  uint32_t rmid = g->rmid;
  if (reparent && m_.mon_capable() && mon_.rmids().depends_on_closid()) {
    const auto& free = mon_.rmids().free_list();
    const uint32_t closid = new_parent_group->closid;
    if (std::find(free.begin(), free.end(), mon_.rmid_idx(closid, rmid)) != free.end()) {
      (void)mon_.claim_rmid(closid, rmid);
    } else {
      Result<uint32_t> r = mon_.alloc_rmid(closid);
      if (!r.ok()) return fail(r.error().code, "Out of RMIDs\n");
      rmid = *r;
    }
  }
  // The group's threads, found by its tags before they change.
  std::vector<pid_t> moving;
  if (reparent) {
    if (const auto* tids = m_.threads.with_rmid(old_closid, old_rmid))
      moving.assign(tids->begin(), tids->end());
  }
  m_.changes.gone(group_key(*g));
  // Move the directory entry.
  p->children.erase(src->name, src->ino);
  src->name = std::string(newname);
  src->parent = np->ino;
  np->children.insert(src->name, src->ino, src->is_dir());
  src->ctime = m_.now_seconds();
  g->name = src->name;
  if (reparent) {
    detach_mon(g);
    attach_mon(new_parent_group, g);
    g->closid = new_parent_group->closid;
    if (mon_.rmid_idx(old_closid, old_rmid) != mon_.rmid_idx(g->closid, rmid))
      mon_.free_rmid(old_closid, old_rmid);
    g->rmid = rmid;
    // Threads of the group take the new CLOSID (and RMID).
    for (pid_t tid : moving) set_thread(tid, g->closid, g->rmid);
    cpus_.update_cpu_assoc(g->cpus);  // empty: a group with CPUs cannot move
    io_ch_.retag(g);
  }
  m_.changes.group(g);
  return Ok();
}

}  // namespace resctrlfs::fs::internal

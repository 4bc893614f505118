// Implements the rdtgroup life cycle of FsImpl: construction, mount and
// unmount (§6), mkdir/rmdir/rename of CTRL_MON and MON groups (§4).
#include <cerrno>
#include <climits>
#include <string>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

using hw::EventId;
using hw::ResourceId;

FsImpl::FsImpl(const FilesystemConfig& cfg)
    : arch_(cfg.arch),
      tasks_(cfg.tasks),
      inval_(cfg.inval),
      mount_uid_(cfg.mount_uid),
      mount_gid_(cfg.mount_gid),
      info_(cfg.arch->info()) {
  auto root = std::make_unique<Node>();
  root->ino = kRootIno;
  root->parent = kRootIno;
  root->kind = NodeKind::kGroupDir;
  root->mode = S_IFDIR | 0755;
  root->uid = mount_uid_;
  root->gid = mount_gid_;
  root->mtime = root->ctime = now_seconds();
  root->nlookup = 1;
  root_node_ = root.get();
  nodes_[kRootIno] = std::move(root);

  // Global monitoring state lives as long as the machine (§6.4).
  threshold_ = info_.mon.default_threshold;
  if (mon_capable()) {
    std::vector<int> doms;
    for (const hw::MonDomain& d : info_.mon.mon_domains) doms.push_back(d.id);
    // An RMID must be valid in every monitor resource (L3 and telemetry).
    rmids_.init(hw::num_rmid_idx(info_), doms, event_enabled(EventId::LLC_OCCUPANCY));
  }
  event_filter_total_ = info_.mon.bmec_supported_mask;
  event_filter_local_ = info_.mon.bmec_supported_mask & 0x15U;
  if (info_.mon.abmc) {
    // ABMC-capable systems boot in mbm_event mode with auto-assignment.
    if (arch_->set_abmc_enabled(true).ok()) {
      mbm_event_mode_ = true;
      assign_on_mkdir_ = true;
    }
  }
}

FsImpl::~FsImpl() = default;

bool FsImpl::alloc_capable() const {
  for (const hw::Resource& r : info_.resources)
    if (r.alloc_capable) return true;
  return false;
}

bool FsImpl::event_enabled(EventId ev) const {
  if (!info_.mon.capable) return false;
  for (EventId e : info_.mon.events)
    if (e == ev) return true;
  return false;
}

EventId FsImpl::default_mba_event() const {
  return event_enabled(EventId::MBM_LOCAL) ? EventId::MBM_LOCAL : EventId::MBM_TOTAL;
}

Result<void> FsImpl::fail(int code, std::string_view msg) {
  lcs_.printf(msg);
  return Error::make(code, std::string(msg));
}

Group* FsImpl::new_group() {
  groups_.push_back(std::make_unique<Group>());
  Group* g = groups_.back().get();
  g->pos = std::prev(groups_.end());
  g->cpus = CpuMask(info_.nr_cpus);
  return g;
}

// ---------------------------------------------------------------------------
// mount / unmount

Result<void> FsImpl::mount(const MountOptions& opts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mounted_) return Error::make(EBUSY, "resctrl is already mounted");
  if (!alloc_capable() && !mon_capable())
    return Error::make(ENODEV, "no RDT allocation or monitoring capability");
  const hw::Resource& l3 = info_.res(ResourceId::L3);
  const hw::Resource& l2 = info_.res(ResourceId::L2);
  const hw::Resource& mb = info_.res(ResourceId::MB);
  if (opts.cdp && !(l3.alloc_capable && l3.cache.cdp_capable))
    return Error::make(EINVAL, "cdp: L3 is not CDP capable");
  if (opts.cdpl2 && !(l2.alloc_capable && l2.cache.cdp_capable))
    return Error::make(EINVAL, "cdpl2: L2 is not CDP capable");
  if (opts.mba_mbps) {
    bool mbm = event_enabled(EventId::MBM_LOCAL) || event_enabled(EventId::MBM_TOTAL);
    // Under SNC the monitoring scope is the NUMA node, not MBA's L3.
    bool same_scope = info_.mon.snc_ways <= 1;
    if (mb.alloc_capable) {
      for (const hw::CtrlDomain& d : mb.ctrl_domains) {
        bool found = false;
        for (const hw::MonDomain& m : info_.mon.mon_domains) found = found || m.id == d.id;
        same_scope = same_scope && found;
      }
    }
    if (!(mbm && mb.alloc_capable && mb.membw.delay_linear && same_scope && !info_.mon.abmc))
      return Error::make(EINVAL,
                         "mba_MBps requires MBM (mbm_event mode not supported) and linear scale "
                         "MBA at L3 scope");
  }
  for (ResourceId rid : {ResourceId::L3, ResourceId::L2}) {
    const hw::Resource& r = info_.res(rid);
    bool want = rid == ResourceId::L3 ? opts.cdp : opts.cdpl2;
    if (r.alloc_capable && r.cache.cdp_capable && arch_->cdp_enabled(rid) != want) {
      RESCTRLFS_RETURN_IF_ERROR(arch_->set_cdp_enabled(rid, want));
    }
  }
  opts_ = opts;

  // Schema list (§2.3) and the CLOSID pool (§4.2).
  std::vector<schemata::ResourceDesc> descs;
  for (int i = 0; i < hw::kNumResources; ++i) {
    const hw::Resource& r = info_.resources[i];
    if (!r.alloc_capable) continue;
    schemata::ResourceDesc d;
    d.name = hw::resource_name(r.rid);
    d.resource_index = i;
    d.kind = r.is_cache() ? schemata::Kind::CACHE : schemata::Kind::BANDWIDTH;
    d.cdp_capable = r.is_cache() && r.cache.cdp_capable;
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
    for (const hw::CtrlDomain& cd : r.ctrl_domains) d.domain_ids.push_back(cd.id);
    descs.push_back(std::move(d));
  }
  schemas_ = schemata::build_schema_list(descs, max_name_width_);
  unsigned nclosid = 0;
  bool first = true;
  for (const schemata::Schema& s : schemas_.schemas) {
    if (first || s.num_closid < nclosid) nclosid = s.num_closid;
    first = false;
  }
  closids_.init(nclosid);

  // Start from a clean machine: default controls, io_alloc off, every CPU
  // and thread in the default group.
  reset_io_alloc();
  RESCTRLFS_RETURN_IF_ERROR(arch_->reset_all_ctrls());
  mbps_target_.clear();
  mba_prev_bytes_.clear();
  thread_tags_.clear();
  rebuild_thread_index();
  cpu_assoc_.assign(info_.nr_cpus, {0, 0});
  cpu_assoc_valid_.assign(info_.nr_cpus, false);
  cpu_assoc_failed_.clear();

  groups_.clear();
  root_ = new_group();
  root_->cpus = info_.online;
  root_->mba_event = default_mba_event();
  for (auto& [dom, owners] : cntr_owner_) owners.clear();
  cntr_owner_.clear();
  for (const hw::MonDomain& d : info_.mon.mon_domains)
    cntr_owner_[d.id].assign(info_.mon.num_mbm_cntrs, std::nullopt);

  root_node_->removed = false;
  root_node_->mode = S_IFDIR | 0755;
  build_group_dir(root_, root_node_, 0755, mount_uid_, mount_gid_);
  build_info_tree();
  update_cpu_assoc();
  mounted_ = true;
  jr_all();
  lcs_.clear();
  assign_cntrs_on_mkdir(root_);
  reset_group_mbm(root_);
  return Ok();
}

void FsImpl::unmount() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!mounted_) return;
  for (ResourceId rid : {ResourceId::L3, ResourceId::L2}) {
    if (arch_->cdp_enabled(rid)) (void)arch_->set_cdp_enabled(rid, false);
  }
  reset_io_alloc();
  (void)arch_->reset_all_ctrls();
  for (auto& [tid, tags] : thread_tags_) arch_->set_thread_tags(tid, 0, 0);
  thread_tags_.clear();
  rebuild_thread_index();
  for (unsigned cpu : info_.online.cpus()) (void)arch_->set_cpu_assoc(cpu, 0, 0);
  // Every group but the default one goes, its RMID into limbo.
  for (auto& g : groups_) {
    unassign_all_cntrs(g.get());
    const bool locking = g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
                         g->mode == schemata::GroupMode::PSEUDO_LOCKED;
    // A locksetup/locked group gave its RMID up already.
    if (locking) pseudo_lock_remove(g.get());
    if (g.get() != root_ && !locking) free_rmid(g->rmid);
  }
  std::vector<Ino> kids;
  for (const ChildMap::Entry& e : root_node_->children) kids.push_back(e.ino);
  for (Ino k : kids)
    if (Node* c = node(k)) remove_node(c, false);
  groups_.clear();
  root_ = nullptr;
  rebuild_cpu_owners();
  root_node_->group = nullptr;
  opts_ = MountOptions{};
  mounted_ = false;
  jr_all();
  mbps_target_.clear();
  mba_prev_bytes_.clear();
}

// ---------------------------------------------------------------------------
// mkdir

Result<Attr> FsImpl::mkdir(Ino parent, std::string_view name, uint32_t mode, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* p = node(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  if (!p->is_dir()) return Error::make(ENOTDIR);
  if (name.size() > 255) return Error::make(ENAMETOOLONG);
  if (child(p, name) != nullptr) return Error::make(EEXIST);
  if (!mounted_) return Error::make(ENOENT);
  if (name.find('\n') != std::string_view::npos) return Error::make(EINVAL);
  Result<Attr> r = Error::make(EPERM);
  if (alloc_capable() && p == root_node_) {
    r = mkdir_ctrl_mon(p, name, mode & 07777, caller);
  } else if (mon_capable()) {
    r = mkdir_mon(p, name, mode & 07777, caller);
  }
  if (r.ok()) {
    if (Node* c = child(p, name)) jr_group(c->group);
  }
  return r;
}

Result<Attr> FsImpl::mkdir_ctrl_mon(Node* parent, std::string_view name, uint32_t mode,
                                    const Caller& caller) {
  lcs_.clear();
  auto closid = closids_.alloc();
  if (!closid.ok()) return fail(ENOSPC, "Out of CLOSIDs\n").error();
  uint32_t rmid = 0;
  if (mon_capable()) {
    auto r = rmids_.alloc();
    if (!r.ok()) {
      closids_.free(*closid);
      return fail(r.error().code, "Out of RMIDs\n").error();
    }
    rmid = *r;
  }
  Group* g = new_group();
  g->type = GroupType::kCtrlMon;
  g->name = std::string(name);
  g->closid = *closid;
  g->rmid = rmid;
  g->mba_event = default_mba_event();
  if (mon_capable()) assign_cntrs_on_mkdir(g);
  Result<void> init = init_alloc(g);
  if (!init.ok()) {
    unassign_all_cntrs(g);
    if (mon_capable()) free_rmid(rmid);
    closids_.free(*closid);
    groups_.erase(g->pos);
    return std::move(init).error();
  }
  const bool root_caller = caller.uid == 0 && caller.gid == 0;
  uid_t uid = root_caller ? mount_uid_ : caller.uid;
  gid_t gid = root_caller ? mount_gid_ : caller.gid;
  Node* dir = add_node(parent, std::string(name), NodeKind::kGroupDir, S_IFDIR | mode, uid, gid);
  build_group_dir(g, dir, mode, uid, gid);
  reset_group_mbm(g);
  ++dir->nlookup;
  return attr_of(*dir);
}

Result<Attr> FsImpl::mkdir_mon(Node* parent, std::string_view name, uint32_t mode,
                               const Caller& caller) {
  // mkdir_rdt_prepare: the parent must belong to a group (info -> ENODEV).
  Group* pg = group_of(*parent);
  if (pg == nullptr) return Error::make(ENODEV);
  lcs_.clear();
  if (parent->kind != NodeKind::kMonGroups || name == "mon_groups") return Error::make(EPERM);
  if (pg->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      pg->mode == schemata::GroupMode::PSEUDO_LOCKED)
    return fail(EINVAL, "Pseudo-locking in progress\n").error();
  auto r = rmids_.alloc();
  if (!r.ok()) return fail(r.error().code, "Out of RMIDs\n").error();
  Group* g = new_group();
  g->type = GroupType::kMon;
  g->name = std::string(name);
  g->parent = pg;
  g->closid = pg->closid;
  g->rmid = *r;
  assign_cntrs_on_mkdir(g);
  pg->mon_children.push_back(g);
  const bool root_caller = caller.uid == 0 && caller.gid == 0;
  uid_t uid = root_caller ? mount_uid_ : caller.uid;
  gid_t gid = root_caller ? mount_gid_ : caller.gid;
  Node* dir = add_node(parent, std::string(name), NodeKind::kGroupDir, S_IFDIR | mode, uid, gid);
  build_group_dir(g, dir, mode, uid, gid);
  reset_group_mbm(g);
  ++dir->nlookup;
  return attr_of(*dir);
}

// ---------------------------------------------------------------------------
// rmdir

void FsImpl::destroy_group(Group* g) {
  unassign_all_cntrs(g);
  if (g->type == GroupType::kMon) {
    auto& kids = g->parent->mon_children;
    std::erase(kids, g);
  }
  // No CPU may stay owned by the group.
  for (unsigned cpu : g->cpus.cpus()) {
    if (cpu >= cpu_ctrl_.size()) continue;
    if (cpu_ctrl_[cpu] == g) cpu_ctrl_[cpu] = nullptr;
    if (cpu_mon_[cpu] == g) cpu_mon_[cpu] = nullptr;
  }
  mba_prev_bytes_.erase(mba_prev_bytes_.lower_bound({g, INT_MIN}),
                        mba_prev_bytes_.upper_bound({g, INT_MAX}));
  groups_.erase(g->pos);
}

Result<void> FsImpl::rmdir(Ino parent, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* p = node(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  Node* n = child(p, name);
  if (n == nullptr) return Error::make(ENOENT);
  if (!n->is_dir()) return Error::make(ENOTDIR);
  Group* g = group_of(*n);
  if (g == nullptr) return Error::make(EPERM);
  lcs_.clear();
  const GroupKey key = group_key(*g);
  if (n->kind == NodeKind::kGroupDir && g->type == GroupType::kCtrlMon && p == root_node_ &&
      !is_root(g)) {
    const bool had_cpus = !g->cpus.empty();
    RESCTRLFS_RETURN_IF_ERROR(rmdir_ctrl(g));
    jr_gone(key);
    if (had_cpus) jr_group(root_);  // took the group's CPUs
  } else if (n->kind == NodeKind::kGroupDir && g->type == GroupType::kMon &&
             p->kind == NodeKind::kMonGroups) {
    RESCTRLFS_RETURN_IF_ERROR(rmdir_mon(g));
    jr_gone(key);
  } else {
    return Error::make(EPERM);
  }
  remove_node(n, false);
  return Ok();
}

Result<void> FsImpl::rmdir_ctrl(Group* g) {
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      g->mode == schemata::GroupMode::PSEUDO_LOCKED) {
    // No tasks, CPUs, MON groups or RMID to give back: just remove it.
    pseudo_lock_remove(g);
    destroy_group(g);
    return Ok();
  }
  move_group_tasks(g, root_);
  root_->cpus |= g->cpus;
  // Its CPUs (and its MON groups', a subset) go to the default group.
  const CpuMask touched = g->cpus;
  for (unsigned cpu : touched.cpus()) {
    if (cpu >= cpu_ctrl_.size()) continue;
    cpu_ctrl_[cpu] = nullptr;
    cpu_mon_[cpu] = nullptr;
  }
  // MON children go with their parent; their entries are not named by the
  // request, so the kernel's dcache is told.
  std::vector<Group*> kids = g->mon_children;
  for (Group* m : kids) {
    if (Node* md = node(m->dir)) remove_node(md, true);
    free_rmid(m->rmid);
    destroy_group(m);
  }
  g->mon_children.clear();
  free_rmid(g->rmid);
  closids_.free(g->closid);
  for (auto it = mbps_target_.begin(); it != mbps_target_.end();)
    it = it->first.second == g->closid ? mbps_target_.erase(it) : std::next(it);
  destroy_group(g);
  update_cpu_assoc(touched);
  return Ok();
}

Result<void> FsImpl::rmdir_mon(Group* g) {
  Group* parent = g->parent;
  move_group_tasks(g, parent);
  free_rmid(g->rmid);
  // Its CPUs fall back to the parent's RMID.
  const CpuMask touched = g->cpus;
  destroy_group(g);
  update_cpu_assoc(touched);
  return Ok();
}

// ---------------------------------------------------------------------------
// rename (§4.7)

bool FsImpl::rename_has_priv(const Node& n) const {
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
        return group_of(d) != nullptr;
    }
  };
  if (n.is_dir()) {
    if (n.kind == NodeKind::kInfo || n.kind == NodeKind::kInfoRes || n.kind == NodeKind::kInfoMon)
      return false;
    return dir_priv(n);
  }
  const Node* parent = const_cast<FsImpl*>(this)->node(n.parent);
  return parent != nullptr && dir_priv(*parent);
}

Result<void> FsImpl::rename(Ino parent, std::string_view name, Ino newparent,
                            std::string_view newname, unsigned flags) {
  std::lock_guard<std::mutex> lock(mu_);
  if (flags != 0) return Error::make(EINVAL);
  Node* p = node(parent);
  Node* np = node(newparent);
  if (p == nullptr || np == nullptr || p->removed || np->removed) return Error::make(ENOENT);
  Node* src = child(p, name);
  if (src == nullptr) return Error::make(ENOENT);
  if (newname.size() > 255) return Error::make(ENAMETOOLONG);
  // The kernel's rdtgroup_rename (fs/resctrl/rdtgroup.c) first maps both
  // nodes to their private data with kernfs_to_rdtgroup(): nothing for info
  // and its direct subdirectories -> ENOENT, LCS untouched. Then it takes
  // the lock, clears last_cmd_status, and only then refuses a file.
  if (!rename_has_priv(*src) || !rename_has_priv(*np)) return Error::make(ENOENT);
  lcs_.clear();
  if (!src->is_dir() || !np->is_dir()) {
    // The one kernel message without a trailing newline.
    lcs_.puts("Source and destination must be directories");
    return Error::make(EPERM, "Source and destination must be directories");
  }
  Group* g = group_of(*src);
  Group* new_parent_group = group_of(*np);
  if (g == nullptr) return fail(EPERM, "Source must be a MON group\n");
  if (src->kind != NodeKind::kGroupDir || g->type != GroupType::kMon ||
      p->kind != NodeKind::kMonGroups)
    return fail(EPERM, "Source must be a MON group\n");
  if (np->kind != NodeKind::kMonGroups || newname == "mon_groups")
    return fail(EPERM, "Destination must be a mon_groups subdirectory\n");
  if (!g->cpus.empty() && g->parent != new_parent_group)
    return fail(EPERM, "Cannot move a MON group that monitors CPUs\n");
  if (Node* existing = child(np, newname)) {
    if (existing == src) return Ok();
    return Error::make(EEXIST);
  }
  jr_gone(group_key(*g));
  // Move the directory entry.
  p->children.erase(src->name, src->ino);
  src->name = std::string(newname);
  src->parent = np->ino;
  np->children.insert(src->name, src->ino, src->is_dir());
  src->ctime = now_seconds();
  g->name = src->name;
  if (g->parent != new_parent_group) {
    std::erase(g->parent->mon_children, g);
    new_parent_group->mon_children.push_back(g);
    g->parent = new_parent_group;
    g->closid = new_parent_group->closid;
    // Threads of the group (matched by RMID) take the new CLOSID.
    move_group_tasks(g, g);
    update_cpu_assoc(g->cpus);  // empty: a group with CPUs cannot move
  }
  jr_group(g);
  return Ok();
}

}  // namespace resctrlfs::fs::internal

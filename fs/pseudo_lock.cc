// Implements cache pseudo-locking as the resctrl filesystem shows it
// (§3.5, §4.6): entering and leaving pseudo-locksetup, locking the region a
// schemata write names, removing it with its group, and the queries the
// overlap rules, the default allocation and bit_usage need.
//
// Model: a pseudo-locksetup group keeps its CLOSID but gives up its RMID and
// may have no tasks, CPUs or MON groups (the files that would add them get
// mode 0000). A valid schemata write programs the region's mask and asks
// hw/ to run the locking sequence; then the group is pseudo-locked, its
// CLOSID goes back to the pool and the region's bits belong to nobody else.
// Every function here runs with mu_ held.
#include <cerrno>
#include <string>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

using schemata::GroupMode;

namespace {

// The kernel allocates the region with kzalloc(), which cannot go beyond
// KMALLOC_MAX_SIZE: 4 MiB on x86-64 (order-10 pages of 4 KiB).
constexpr uint64_t kMaxRegionBytes = uint64_t{4} << 20;

uint32_t row_mode(std::string_view name) {
  for (const FileRow& r : file_table())
    if (name == r.name) return r.mode;
  return 0;
}

}  // namespace

CpuMask FsImpl::ctrl_domain_cpus(int resource_index, int domain) const {
  for (const hw::CtrlDomain& d : info_.resources[resource_index].ctrl_domains)
    if (d.id == domain) return d.cpus;
  return CpuMask(info_.nr_cpus);
}

uint32_t FsImpl::locked_cbm(int resource_index, int domain) const {
  // Only CTRL_MON groups are locked.
  uint32_t cbm = 0;
  any_ctrl_group([&](const Group& g) {
    if (!g.plr || g.plr->domain != domain ||
        schemas_.schemas[g.plr->schema].resource_index != resource_index)
      return false;
    cbm = g.plr->cbm;
    return true;
  });
  return cbm;
}

Result<void> FsImpl::check_locked_domain(const Group& g) {
  if (!g.plr) return Ok();
  for (const hw::CtrlDomain& d :
       info_.resources[schemas_.schemas[g.plr->schema].resource_index].ctrl_domains)
    if (d.id == g.plr->domain) return Ok();
  return fail(ENODEV, "Cache domain offline\n");
}

bool FsImpl::locked_in_hierarchy(int resource_index, int domain,
                                 const std::vector<PendingRegion>& pending) const {
  const CpuMask cpus = ctrl_domain_cpus(resource_index, domain);
  auto hits = [&](const Group::LockedRegion& r) {
    return cpus.intersects(ctrl_domain_cpus(schemas_.schemas[r.schema].resource_index, r.domain));
  };
  if (any_ctrl_group([&](const Group& g) { return g.plr && hits(*g.plr); })) return true;
  for (const PendingRegion& p : pending)
    if (hits(p)) return true;
  return false;
}

void FsImpl::set_child_mode(Group* g, std::string_view name, uint32_t perms) {
  Node* dir = node(g->dir);
  if (dir == nullptr) return;
  Node* n = child(dir, name);
  if (n == nullptr) return;
  n->mode = (n->mode & S_IFMT) | (perms & 07777);
  n->ctime = now_seconds();
  if (inval_ != nullptr) inval_->inval_inode(n->ino);
}

void FsImpl::restrict_locksetup_files(Group* g) {
  // Type bits only: open() then fails with EACCES, even for root.
  for (const char* f : {"tasks", "cpus", "cpus_list"}) set_child_mode(g, f, 0);
  if (mon_capable()) set_child_mode(g, "mon_groups", 0);
}

Result<void> FsImpl::locksetup_enter(Group* g) {
  if (is_root(g)) return fail(EINVAL, "Cannot pseudo-lock default group\n");
  if (arch_->cdp_enabled(hw::ResourceId::L3) || arch_->cdp_enabled(hw::ResourceId::L2))
    return fail(EINVAL, "CDP enabled\n");
  if (!info_.pseudo_lock_capable) return fail(EINVAL, "Pseudo-locking not supported\n");
  if (!g->mon_children.empty()) return fail(EINVAL, "Monitoring in progress\n");
  if (const auto* tids = threads_of_closid(g->closid)) {
    for (pid_t tid : *tids) {
      if (tasks_ == nullptr || tasks_->exists(tid))
        return fail(EINVAL, "Tasks assigned to resource group\n");
    }
  }
  if (!g->cpus.empty()) return fail(EINVAL, "CPUs assigned to resource group\n");
  restrict_locksetup_files(g);
  // The group will lose its CLOSID, so it cannot be monitored either. The
  // number stays in g->rmid (mon_hw_id still prints it), but the RMID is
  // no longer the group's: nothing frees it again.
  if (mon_capable()) free_rmid(g->rmid);
  g->plr.reset();
  return Ok();
}

Result<void> FsImpl::locksetup_exit(Group* g) {
  if (mon_capable()) {
    auto r = rmids_.alloc();
    if (!r.ok()) return fail(r.error().code, "Out of RMIDs\n");
    g->rmid = *r;
  }
  for (const char* f : {"tasks", "cpus", "cpus_list"}) set_child_mode(g, f, row_mode(f));
  if (mon_capable()) {
    // kernfs gives the directory its parent's permissions back.
    const Node* dir = node(g->dir);
    set_child_mode(g, "mon_groups", dir != nullptr ? dir->mode & 07777 : 0755);
  }
  g->plr.reset();
  return Ok();
}

Result<void> FsImpl::pseudo_lock_create(Group* g, const PendingRegion& r) {
  const schemata::Schema& s = schemas_.schemas[r.schema];
  const CpuMask cpus = ctrl_domain_cpus(s.resource_index, r.domain);
  const unsigned cpu = cpus.first();
  if (cpu >= cpus.size() || !info_.online.test(cpu))
    return fail(ENODEV, "CPU " + std::to_string(cpu) + " associated with cache not online\n");
  if (schemata::cbm_to_size(s, r.cbm) > kMaxRegionBytes)
    return fail(E2BIG, "Requested region exceeds maximum size\n");
  Result<void> lk = arch_->pseudo_lock(rid_of(s), r.domain, g->closid, r.cbm);
  if (!lk.ok()) {
    const int code = lk.error().code;
    return fail(code, "Locking thread returned error -" + std::to_string(code) + "\n");
  }
  g->plr = r;
  g->mode = GroupMode::PSEUDO_LOCKED;
  closids_.free(g->closid);
  // The CPUs of the locked cache can be read again; tasks stays closed.
  for (const char* f : {"cpus", "cpus_list"}) set_child_mode(g, f, row_mode(f) & 0444);
  return Ok();
}

void FsImpl::pseudo_lock_remove(Group* g) {
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP) {
    closids_.free(g->closid);
  } else if (g->plr) {
    const schemata::Schema& s = schemas_.schemas[g->plr->schema];
    arch_->pseudo_unlock(rid_of(s), g->plr->domain);
  }
  g->plr.reset();
}

}  // namespace resctrlfs::fs::internal

// Implements cache pseudo-locking (the PseudoLock part) as the resctrl filesystem shows it (the
// kernel's Documentation/filesystems/resctrl.rst, "Cache pseudo-locking"):
// entering and leaving pseudo-locksetup, locking the region a
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

#include "fs/parts.h"

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

CpuMask PseudoLock::ctrl_domain_cpus(int resource_index, int domain) const {
  for (const hw::CtrlDomain& d : m_.info.resources[resource_index].ctrl_domains)
    if (d.id == domain) return d.cpus;
  return CpuMask(m_.info.nr_cpus);
}

uint32_t PseudoLock::locked_cbm(int resource_index, int domain) const {
  // Only CTRL_MON groups are locked.
  uint32_t cbm = 0;
  m_.any_ctrl_group([&](const Group& g) {
    if (!g.plr || g.plr->domain != domain ||
        m_.schemas.schemas[g.plr->schema].resource_index != resource_index)
      return false;
    cbm = g.plr->cbm;
    return true;
  });
  return cbm;
}

Result<void> PseudoLock::check_locked_domain(const Group& g) {
  if (!g.plr) return Ok();
  for (const hw::CtrlDomain& d :
       m_.info.resources[m_.schemas.schemas[g.plr->schema].resource_index].ctrl_domains)
    if (d.id == g.plr->domain) return Ok();
  return fail(ENODEV, "Cache domain offline\n");
}

bool PseudoLock::locked_in_hierarchy(int resource_index, int domain,
                                     const std::vector<PendingRegion>& pending) const {
  const CpuMask cpus = ctrl_domain_cpus(resource_index, domain);
  auto hits = [&](const Group::LockedRegion& r) {
    return cpus.intersects(ctrl_domain_cpus(m_.schemas.schemas[r.schema].resource_index, r.domain));
  };
  if (m_.any_ctrl_group([&](const Group& g) { return g.plr && hits(*g.plr); })) return true;
  for (const PendingRegion& p : pending)
    if (hits(p)) return true;
  return false;
}

void PseudoLock::set_child_mode(Group* g, std::string_view name, uint32_t perms) {
  Node* dir = m_.nodes.get(g->dir);
  if (dir == nullptr) return;
  Node* n = m_.nodes.child(dir, name);
  if (n == nullptr) return;
  n->mode = (n->mode & S_IFMT) | (perms & 07777);
  n->ctime = m_.now_seconds();
  if (m_.inval != nullptr) m_.inval->inval_inode(n->ino);
}

void PseudoLock::restrict_locksetup_files(Group* g) {
  // Type bits only: open() then fails with EACCES, even for root.
  for (const char* f : {"tasks", "cpus", "cpus_list"}) set_child_mode(g, f, 0);
  if (m_.mon_capable()) set_child_mode(g, "mon_groups", 0);
}

Result<void> PseudoLock::locksetup_enter(Group* g) {
  if (m_.is_root(g)) return fail(EINVAL, "Cannot pseudo-lock default group\n");
  if (m_.arch->cdp_enabled(hw::ResourceId::L3) || m_.arch->cdp_enabled(hw::ResourceId::L2))
    return fail(EINVAL, "CDP enabled\n");
  if (!m_.info.pseudo_lock_capable) return fail(EINVAL, "Pseudo-locking not supported\n");
  if (!g->mon_children.empty()) return fail(EINVAL, "Monitoring in progress\n");
  if (const auto* tids = m_.threads.with_closid(g->closid)) {
    for (pid_t tid : *tids) {
      // A thread not known to be gone (its lookup failed) is assigned.
      if (m_.tasks == nullptr || m_.tasks->lookup(tid) != ESRCH)
        return fail(EINVAL, "Tasks assigned to resource group\n");
    }
  }
  if (!g->cpus.empty()) return fail(EINVAL, "CPUs assigned to resource group\n");
  restrict_locksetup_files(g);
  // The group will lose its CLOSID, so it cannot be monitored either. The
  // number stays in g->rmid (mon_hw_id still prints it), but the RMID is
  // no longer the group's: nothing frees it again.
  if (m_.mon_capable()) mon_.free_rmid(g->closid, g->rmid);
  g->plr.reset();
  return Ok();
}

Result<void> PseudoLock::locksetup_exit(Group* g) {
  if (m_.mon_capable()) {
    auto r = mon_.alloc_rmid(g->closid);
    if (!r.ok()) return fail(r.error().code, "Out of RMIDs\n");
    g->rmid = *r;
  }
  for (const char* f : {"tasks", "cpus", "cpus_list"}) set_child_mode(g, f, row_mode(f));
  if (m_.mon_capable()) {
    // kernfs gives the directory its parent's permissions back.
    const Node* dir = m_.nodes.get(g->dir);
    set_child_mode(g, "mon_groups", dir != nullptr ? dir->mode & 07777 : 0755);
  }
  g->plr.reset();
  return Ok();
}

Result<void> PseudoLock::pseudo_lock_create(Group* g, const PendingRegion& r) {
  const schemata::Schema& s = m_.schemas.schemas[r.schema];
  const CpuMask cpus = ctrl_domain_cpus(s.resource_index, r.domain);
  const unsigned cpu = cpus.first();
  if (cpu >= cpus.size() || !m_.info.online.test(cpu))
    return fail(ENODEV, "CPU " + std::to_string(cpu) + " associated with cache not online\n");
  if (schemata::cbm_to_size(s, r.cbm) > kMaxRegionBytes)
    return fail(E2BIG, "Requested region exceeds maximum size\n");
  m_.assert_command_locked();
  Result<void> lk = m_.arch->pseudo_lock(rid_of(s), r.domain, g->closid, r.cbm);
  if (!lk.ok()) {
    const int code = lk.error().code;
    return fail(code, "Locking thread returned error -" + std::to_string(code) + "\n");
  }
  g->plr = r;
  g->mode = GroupMode::PSEUDO_LOCKED;
  m_.closids.free(g->closid);
  // The CPUs of the locked cache can be read again; tasks stays closed.
  for (const char* f : {"cpus", "cpus_list"}) set_child_mode(g, f, row_mode(f) & 0444);
  return Ok();
}

void PseudoLock::pseudo_lock_remove(Group* g) {
  if (g->mode == GroupMode::PSEUDO_LOCKSETUP) {
    m_.closids.free(g->closid);
  } else if (g->plr) {
    const schemata::Schema& s = m_.schemas.schemas[g->plr->schema];
    m_.arch->pseudo_unlock(rid_of(s), g->plr->domain);
  }
  g->plr.reset();
}

}  // namespace resctrlfs::fs::internal

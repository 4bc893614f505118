// Implements CPU hotplug in FsImpl: the OS half of the cpuhp callbacks
// (a CPU leaving every group on offline, joining the default group on
// online) and the domain up-calls hw/ makes in between, which make
// mon_data directories, schemata columns, limbo marks and counters follow
// the domains that exist.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

// The ArchEvents hw/ calls back during Arch::offline_cpu/online_cpu, while
// FsImpl holds its model lock.
class HotplugEvents final : public hw::ArchEvents {
 public:
  explicit HotplugEvents(FsImpl& fs) : fs_(fs) {}
  void ctrl_domain_online(hw::ResourceId rid, int id) override { fs_.ctrl_domain_back(rid, id); }
  void ctrl_domain_offline(hw::ResourceId rid, int id) override { fs_.ctrl_domain_gone(rid, id); }
  void mon_domain_online(int id) override { fs_.mon_domain_back(id); }
  void mon_domain_offline(int id) override { fs_.mon_domain_gone(id); }
  void perf_pkg_domain_online(int id) override { fs_.perf_pkg_domain_back(id); }
  void perf_pkg_domain_offline(int id) override { fs_.perf_pkg_domain_gone(id); }

 private:
  FsImpl& fs_;
};

Result<void> FsImpl::cpu_offline(unsigned cpu) {
  std::lock_guard<std::mutex> lock(mu_);
  // The kernel lets go of the CPU in its groups before the domains; nothing
  // in between looks at group CPUs, so doing it after hw/ has agreed keeps
  // a refusal free of side effects.
  HotplugEvents events(*this);
  RESCTRLFS_RETURN_IF_ERROR(arch_->offline_cpu(cpu, &events));
  if (mounted_) {
    // Exactly one CTRL_MON group owns the CPU, and at most one of its MON
    // groups: the owner tables name them.
    if (cpu < cpu_ctrl_.size()) {
      cpu_ctrl(cpu)->cpus.reset(cpu);
      root_->cpus.reset(cpu);
      if (Group* m = cpu_mon_[cpu]) m->cpus.reset(cpu);
      cpu_ctrl_[cpu] = nullptr;
      cpu_mon_[cpu] = nullptr;
    }
    if (cpu < cpu_assoc_valid_.size()) cpu_assoc_valid_[cpu] = false;
    jr_all();  // CPUs, schemata domains and counters of any group
  }
  return Ok();
}

Result<void> FsImpl::cpu_online(unsigned cpu) {
  std::lock_guard<std::mutex> lock(mu_);
  HotplugEvents events(*this);
  RESCTRLFS_RETURN_IF_ERROR(arch_->online_cpu(cpu, &events));
  if (mounted_) {
    root_->cpus.set(cpu);
    // hw/ has written PQR_ASSOC 0/0, the default group's tags.
    if (cpu < cpu_assoc_.size()) {
      cpu_assoc_[cpu] = {0, 0};
      cpu_assoc_valid_[cpu] = true;
    }
    jr_all();
  }
  return Ok();
}

void FsImpl::ctrl_domain_gone(hw::ResourceId rid, int domain_id) {
  if (!mounted_) return;
  for (schemata::Schema& s : schemas_.schemas) {
    if (s.resource_index == static_cast<int>(rid)) std::erase(s.domain_ids, domain_id);
  }
  // A pseudo-locked region is lost with its cache; like the kernel, its
  // group stays pseudo-locked and reads "Cache domain offline" from now on,
  // even if the domain comes back.
  for (auto& g : groups_) {
    if (g->plr && g->plr->domain == domain_id &&
        schemas_.schemas[g->plr->schema].resource_index == static_cast<int>(rid))
      g->plr->domain = kNoDomain;
  }
  if (rid == hw::ResourceId::MB) {
    for (auto it = mbps_target_.begin(); it != mbps_target_.end();)
      it = it->first.first == domain_id ? mbps_target_.erase(it) : std::next(it);
  }
}

void FsImpl::ctrl_domain_back(hw::ResourceId rid, int domain_id) {
  // hw/ has put the default value in every CLOSID; under mba_MBps an absent
  // target reads as the unlimited default too.
  if (!mounted_) return;
  for (schemata::Schema& s : schemas_.schemas) {
    if (s.resource_index != static_cast<int>(rid)) continue;
    auto pos = std::lower_bound(s.domain_ids.begin(), s.domain_ids.end(), domain_id);
    if (pos == s.domain_ids.end() || *pos != domain_id) s.domain_ids.insert(pos, domain_id);
  }
}

void FsImpl::mon_domain_gone(int domain_id) {
  if (!mon_capable()) return;
  rmids_.remove_domain(domain_id);
  if (!mounted_) return;
  for (auto& g : groups_) {
    // The domain's counters vanish with it.
    for (auto it = g->cntrs.begin(); it != g->cntrs.end();)
      it = it->first.first == domain_id ? g->cntrs.erase(it) : std::next(it);
    Node* dir = node(g->dir);
    Node* md = dir != nullptr ? child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    std::vector<Node*> gone;
    for (const ChildMap::Entry& e : md->children) {
      Node* c = node(e.ino);
      // Telemetry domains are packages: they have their own up-calls.
      if (c == nullptr || c->kind != NodeKind::kMonDomain || c->mon_rid != hw::ResourceId::L3)
        continue;
      if (!c->mon_sum) {
        if (c->domain == domain_id) gone.push_back(c);
        continue;
      }
      // SNC: the node's mon_sub_L3_YY goes; the L3's directory goes with
      // its last node.
      unsigned subs = 0;
      Node* sub = nullptr;
      for (const ChildMap::Entry& se : c->children) {
        Node* s = node(se.ino);
        if (s == nullptr || s->kind != NodeKind::kMonDomain) continue;
        ++subs;
        if (s->domain == domain_id) sub = s;
      }
      if (sub == nullptr) continue;
      gone.push_back(subs == 1 ? c : sub);
    }
    // Nobody named these entries: the kernel's dcache must be told.
    for (Node* c : gone) remove_node(c, true);
  }
  cntr_owner_.erase(domain_id);
  for (auto it = mba_prev_bytes_.begin(); it != mba_prev_bytes_.end();)
    it = it->first.second == domain_id ? mba_prev_bytes_.erase(it) : std::next(it);
}

void FsImpl::mon_domain_back(int domain_id) {
  if (!mon_capable()) return;
  rmids_.add_domain(domain_id);
  if (!mounted_) return;
  // A new domain has every counter free; no group has one assigned there.
  cntr_owner_[domain_id].assign(info_.mon.num_mbm_cntrs, std::nullopt);
  for (auto& g : groups_) {
    Node* dir = node(g->dir);
    Node* md = dir != nullptr ? child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    Node* dd = build_mon_domain(md, domain_id);
    // A negative dentry for the name may be cached from while it was gone.
    if (inval_ != nullptr) inval_->inval_entry(dd->parent, dd->name);
  }
  // MBM state of the new domain is fresh in hw/: the first read of each
  // group is its baseline, as the kernel's mkdir_mondata_subdir read does.
  for (auto& g : groups_) {
    for (hw::EventId ev : info_.mon.events)
      if (is_mbm(ev)) arch_->reset_event(domain_id, g->rmid, ev);
  }
}

void FsImpl::perf_pkg_domain_gone(int package_id) {
  if (!mounted_) return;
  for (auto& g : groups_) {
    Node* dir = node(g->dir);
    Node* md = dir != nullptr ? child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    char name[32];
    std::snprintf(name, sizeof(name), "mon_PERF_PKG_%02d", package_id);
    if (Node* c = child(md, name)) remove_node(c, true);
  }
}

void FsImpl::perf_pkg_domain_back(int package_id) {
  // Telemetry needs no reset: the aggregators' counts are cumulative.
  if (!mounted_) return;
  for (auto& g : groups_) {
    Node* dir = node(g->dir);
    Node* md = dir != nullptr ? child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    Node* dd = build_perf_pkg_domain(md, package_id);
    if (inval_ != nullptr) inval_->inval_entry(md->ino, dd->name);
  }
}

}  // namespace resctrlfs::fs::internal

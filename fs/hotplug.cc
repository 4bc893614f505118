// Implements CPU hotplug (FsImpl::cpu_offline/cpu_online and HotplugEvents): the OS half of the
// cpuhp callbacks (a CPU leaving every group on offline, joining the default group on online) and
// the domain up-calls hw/ makes in between, which make mon_data directories, schemata columns,
// limbo marks and counters follow the domains that exist.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

// The ArchEvents hw/ calls back during Arch::offline_cpu/online_cpu, while
// FsImpl holds its model lock.
class HotplugEvents final : public hw::ArchEvents, RootHelper {
 public:
  using RootHelper::RootHelper;
  void ctrl_domain_online(hw::ResourceId rid, int id) override { ctrl_domain_back(rid, id); }
  void ctrl_domain_offline(hw::ResourceId rid, int id) override { ctrl_domain_gone(rid, id); }
  void mon_domain_online(hw::ResourceId rid, int id) override { mon_domain_back(rid, id); }
  void mon_domain_offline(hw::ResourceId rid, int id) override { mon_domain_gone(rid, id); }

 private:
  void ctrl_domain_gone(hw::ResourceId rid, int domain_id);
  void ctrl_domain_back(hw::ResourceId rid, int domain_id);
  void mon_domain_gone(hw::ResourceId rid, int domain_id);
  void mon_domain_back(hw::ResourceId rid, int domain_id);
};

Result<void> FsImpl::cpu_offline(unsigned cpu) {
  CommandLock lock(*this);
  // The kernel lets go of the CPU in its groups before the domains; nothing
  // in between looks at group CPUs, so doing it after hw/ has agreed keeps
  // a refusal free of side effects.
  HotplugEvents events(m_, p_);
  if (Result<void> r = m_.arch->offline_cpu(cpu, &events); !r.ok())
    return worded(std::move(r).error());
  if (m_.mounted) {
    // Exactly one CTRL_MON group owns the CPU, and at most one of its MON
    // groups: the owner tables name them.
    p_.cpus.cpu_gone(cpu);
    m_.changes.all();  // CPUs, schemata domains and counters of any group
  }
  return Ok();
}

Result<void> FsImpl::cpu_online(unsigned cpu) {
  CommandLock lock(*this);
  HotplugEvents events(m_, p_);
  if (Result<void> r = m_.arch->online_cpu(cpu, &events); !r.ok())
    return worded(std::move(r).error());
  if (m_.mounted) {
    m_.root->cpus.set(cpu);
    p_.cpus.cpu_back(cpu);
    m_.changes.all();
  }
  return Ok();
}

void HotplugEvents::ctrl_domain_gone(hw::ResourceId rid, int domain_id) {
  m_.assert_command_locked();
  if (!m_.mounted) return;
  for (schemata::Schema& s : m_.schemas.schemas) {
    if (s.resource_index == static_cast<int>(rid)) std::erase(s.domain_ids, domain_id);
  }
  // A pseudo-locked region is lost with its cache; like the kernel, its
  // group stays pseudo-locked and reads "Cache domain offline" from now on,
  // even if the domain comes back.
  for (auto& g : m_.groups) {
    if (g->plr && g->plr->domain == domain_id &&
        m_.schemas.schemas[g->plr->schema].resource_index == static_cast<int>(rid))
      g->plr->domain = kNoDomain;
  }
  if (rid == hw::ResourceId::MB) {
    p_.mon.mb_domain_gone(domain_id);
  }
}

void HotplugEvents::ctrl_domain_back(hw::ResourceId rid, int domain_id) {
  m_.assert_command_locked();
  // hw/ has put the default value in every CLOSID; under mba_MBps an absent
  // target reads as the unlimited default too.
  if (!m_.mounted) return;
  for (schemata::Schema& s : m_.schemas.schemas) {
    if (s.resource_index != static_cast<int>(rid)) continue;
    auto pos = std::lower_bound(s.domain_ids.begin(), s.domain_ids.end(), domain_id);
    if (pos == s.domain_ids.end() || *pos != domain_id) s.domain_ids.insert(pos, domain_id);
  }
}

// The state kept per monitoring domain beyond its directories (RMID limbo,
// assignable counters, the MBM baselines) is the L3's, as in the kernel's
// resctrl_online_mon_domain()/resctrl_offline_mon_domain(); every
// monitor-capable resource's domains have directories in each mon_data.
void HotplugEvents::mon_domain_gone(hw::ResourceId rid, int domain_id) {
  m_.assert_command_locked();
  if (!m_.info.res(rid).mon.capable) return;
  const bool l3 = rid == hw::ResourceId::L3;
  if (l3) p_.mon.rmids().remove_domain(domain_id);
  if (!m_.mounted) return;
  for (auto& g : m_.groups) {
    // The domain's counters vanish with it.
    if (l3) {
      for (auto it = g->cntrs.begin(); it != g->cntrs.end();)
        it = it->first.first == domain_id ? g->cntrs.erase(it) : std::next(it);
    }
    Node* dir = m_.nodes.get(g->dir);
    Node* md = dir != nullptr ? m_.nodes.child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    std::vector<Node*> gone;
    for (const ChildMap::Entry& e : md->children) {
      Node* c = m_.nodes.get(e.ino);
      if (c == nullptr || c->kind != NodeKind::kMonDomain || c->mon_rid != rid) continue;
      if (!c->mon_sum) {
        if (c->domain == domain_id) gone.push_back(c);
        continue;
      }
      // SNC: the node's mon_sub_<RES>_YY goes; the cache's directory goes
      // with its last node.
      unsigned subs = 0;
      Node* sub = nullptr;
      for (const ChildMap::Entry& se : c->children) {
        Node* s = m_.nodes.get(se.ino);
        if (s == nullptr || s->kind != NodeKind::kMonDomain) continue;
        ++subs;
        if (s->domain == domain_id) sub = s;
      }
      if (sub == nullptr) continue;
      gone.push_back(subs == 1 ? c : sub);
    }
    // Nobody named these entries: the kernel's dcache must be told.
    for (Node* c : gone) m_.nodes.remove(c, m_.inval);
  }
  if (l3) p_.mon.mon_domain_gone(domain_id);
}

void HotplugEvents::mon_domain_back(hw::ResourceId rid, int domain_id) {
  m_.assert_command_locked();
  const hw::MonCaps& mon = m_.info.res(rid).mon;
  if (!mon.capable) return;
  const bool l3 = rid == hw::ResourceId::L3;
  if (l3) p_.mon.rmids().add_domain(domain_id);
  if (!m_.mounted) return;
  if (l3) p_.mon.mon_domain_back(domain_id);
  for (auto& g : m_.groups) {
    Node* dir = m_.nodes.get(g->dir);
    Node* md = dir != nullptr ? m_.nodes.child(dir, "mon_data") : nullptr;
    if (md == nullptr) continue;
    Node* dd = p_.tree.build_mon_domain(md, rid, domain_id);
    // A negative dentry for the name may be cached from while it was gone.
    if (m_.inval != nullptr) m_.inval->inval_entry(dd->parent, dd->name);
  }
  // MBM state of the new domain is fresh in hw/: the first read of each
  // group is its baseline, as the kernel's mkdir_mondata_subdir read does.
  // Other counters (occupancy, the telemetry's cumulative counts) need none.
  for (auto& g : m_.groups) {
    for (const hw::MonEvent& ev : mon.events)
      if (m_.is_mbm(ev.id)) m_.arch->reset_counter(rid, domain_id, g->closid, g->rmid, ev.id);
  }
}

}  // namespace resctrlfs::fs::internal

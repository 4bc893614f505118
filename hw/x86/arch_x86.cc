// Implements X86Arch (see arch_x86.h): control registers with shadow copies
// and rollback, CDP, PQR_ASSOC, the QM_EVTSEL/QM_CTR keyhole with counter
// folding and the MBM errata correction, BMEC, ABMC, SDCIAE (io_alloc) and
// the register part of cache pseudo-locking.
#include "hw/x86/arch_x86.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>

#include "hw/x86/registers.h"

namespace resctrlfs::hw::x86 {
namespace {

Error write_failed() { return write_failure(); }

int mbm_index(EventId ev) { return ev == EventId::MBM_LOCAL ? 1 : 0; }

std::vector<unsigned> first_cpu_of(const CpuMask& m) {
  unsigned c = m.first();
  return c < m.size() ? std::vector<unsigned>{c} : std::vector<unsigned>{};
}

}  // namespace

X86Arch::X86Arch(X86Platform info, HwLimits limits, std::shared_ptr<MsrDevice> msr,
                 std::shared_ptr<ThreadTagger> sched)
    : info_(std::move(info)),
      limits_(limits),
      msr_(std::move(msr)),
      sched_(std::move(sched)),
      correction_(mbm_correction(info_)),
      prefetch_disable_bits_(prefetch_disable_bits(info_.vendor, info_.family, info_.model)) {
  for (int r = 0; r < kNumResources; ++r) {
    const Resource& res = info_.resources[r];
    if (!res.alloc_capable) continue;
    shadow_[r].assign(res.ctrl_domains.size(),
                      std::vector<uint32_t>(res.num_closid, default_ctrl(res.rid)));
  }
  pqr_cache_.resize(info_.nr_cpus);
  pqr_want_.resize(info_.nr_cpus);
  synced_reconnects_ = msr_->reconnects();
  mon_.assign(info_.res(ResourceId::L3).mon.mon_domains.size(), fresh_mon_state());
}

X86Arch::MonDomState X86Arch::fresh_mon_state() const {
  MonDomState m;
  for (auto& v : m.rmid) v.resize(info_.res(ResourceId::L3).mon.num_rmids);
  m.cntr.resize(info_.res(ResourceId::L3).mon.cntr_assign.num_cntrs);
  m.cntr_cfg.resize(info_.res(ResourceId::L3).mon.cntr_assign.num_cntrs);
  m.evt_cfg[0] = info_.res(ResourceId::L3).mon.evt_cfg.default_total;
  m.evt_cfg[1] = info_.res(ResourceId::L3).mon.evt_cfg.default_local;
  return m;
}

Result<std::unique_ptr<X86Arch>> X86Arch::create(X86Platform info, HwLimits limits,
                                                 std::shared_ptr<MsrDevice> msr,
                                                 std::shared_ptr<ThreadTagger> sched,
                                                 std::shared_ptr<PmtTelemetryDevice> pmt,
                                                 const RdtOptions& rdt) {
  std::unique_ptr<AetTelemetry> aet;
  if (pmt) aet = std::make_unique<AetTelemetry>(std::move(pmt), info, rdt);
  std::unique_ptr<X86Arch> a(
      new X86Arch(std::move(info), limits, std::move(msr), std::move(sched)));
  a->aet_ = std::move(aet);
  RESCTRLFS_RETURN_IF_ERROR(a->init());
  return a;
}

Result<void> X86Arch::init() {
  RESCTRLFS_RETURN_IF_ERROR(reset_all_ctrls());
  for (ResourceId rid : {ResourceId::L3, ResourceId::L2}) {
    if (info_.res(rid).alloc_capable && info_.res(rid).cache.cdp_capable)
      RESCTRLFS_RETURN_IF_ERROR(set_cdp_enabled(rid, false));
  }
  for (unsigned cpu : info_.online.cpus()) {
    if (!msr_->write(cpu, IA32_PQR_ASSOC, 0).ok()) return write_failed();
    pqr_cache_[cpu] = 0;
    pqr_want_[cpu] = 0;
  }
  // Sub-NUMA Clustering: switch the RMIDs to sharing mode once per node
  // domain, as Linux does when each such domain comes online (read, then
  // write only if the bit is set), so that logical RMIDs count on every node.
  if (info_.res(ResourceId::L3).mon.capable && info_.res(ResourceId::L3).mon.snc_ways > 1) {
    for (const MonDomain& d : info_.res(ResourceId::L3).mon.mon_domains)
      RESCTRLFS_RETURN_IF_ERROR(enable_rmid_sharing(d.cpus.first()));
  }
  // BMEC and ABMC state survive in the hardware; adopt it.
  for (size_t i = 0; i < mon_.size(); ++i) {
    unsigned cpu = info_.res(ResourceId::L3).mon.mon_domains[i].cpus.first();
    if (info_.res(ResourceId::L3).mon.evt_cfg.capable) {
      for (int e = 0; e < 2; ++e) {
        auto v = msr_->read(cpu, QOS_EVT_CFG_0 + e);
        if (v.ok()) mon_[i].evt_cfg[e] = static_cast<uint32_t>(*v & BMEC_MAX_EVT_CONFIG_BITS);
      }
    }
    if (info_.res(ResourceId::L3).mon.cntr_assign.capable && i == 0) {
      auto v = msr_->read(cpu, L3_QOS_EXT_CFG);
      abmc_enabled_ = v.ok() && (*v & L3_QOS_EXT_CFG_ABMC_EN) != 0;
    }
  }
  // Like ABMC, SDCIAE survives in the hardware; adopt it (fs/ turns it off
  // at mount).
  const Resource& l3 = info_.res(ResourceId::L3);
  if (l3.cache.io_alloc_capable && !l3.ctrl_domains.empty()) {
    auto v = msr_->read(l3.ctrl_domains.front().cpus.first(), L3_QOS_EXT_CFG);
    io_alloc_enabled_ = v.ok() && (*v & L3_QOS_EXT_CFG_SDCIAE_EN) != 0;
  }
  return Ok();
}

// ---- Controls.

int X86Arch::ctrl_domain_index(ResourceId rid, int domain_id) const {
  const auto& doms = info_.res(rid).ctrl_domains;
  for (size_t i = 0; i < doms.size(); ++i)
    if (doms[i].id == domain_id) return static_cast<int>(i);
  return -1;
}

uint32_t X86Arch::hw_index(ResourceId rid, ConfType type, uint32_t closid) const {
  return cdp_enabled(rid) ? cdp_hw_index(closid, type) : closid;
}

uint32_t X86Arch::default_ctrl(ResourceId rid) const {
  const Resource& r = info_.res(rid);
  return r.is_bitmap() ? r.cache.full_mask() : r.membw.max_bw;
}

uint32_t X86Arch::ctrl_msr(ResourceId rid, uint32_t idx) const {
  switch (rid) {
    case ResourceId::L3:
      return IA32_L3_MASK_0 + idx;
    case ResourceId::L2:
      return IA32_L2_MASK_0 + idx;
    case ResourceId::MB:
      return limits_.amd ? L3QOS_BW_CONTROL_0 + idx : IA32_L2_QOS_EXT_BW_THRTL_0 + idx;
    case ResourceId::SMBA:
      return L3QOS_SLOW_BW_CONTROL_0 + idx;
    case ResourceId::CB:
      return IA32_QOS_CORE_BW_THRTL_0 + idx / CBA_CLOS_PER_MSR;
    case ResourceId::STLB:
      return STLB_QOS_MASK_0 + idx;
    case ResourceId::PERF_PKG:
      break;  // monitor-only: no control registers
  }
  return 0;
}

uint64_t X86Arch::ctrl_reg_value(ResourceId rid, uint32_t value) const {
  if (rid == ResourceId::MB && !limits_.amd) {
    // Linear Intel MBA: the register holds the delay, 100 - percent.
    return value >= MAX_MBA_BW ? 0 : MAX_MBA_BW - value;
  }
  if (rid == ResourceId::CB) {
    // The throttle level: 100% is level 0, each bandwidth_gran below it one
    // level more (a value between two levels, which fs/ rounds to the
    // granularity first anyway, takes the lesser throttle).
    const MembwCaps& c = info_.res(rid).membw;
    if (value >= c.max_bw || c.bw_gran == 0) return 0;
    return std::min<uint64_t>((c.max_bw - value) / c.bw_gran, limits_.cba_max_level);
  }
  // Cache masks as they are; AMD bandwidth in 1/8 GB/s, where max_bw
  // (1 << BW_LEN) is exactly the U (unlimited) bit.
  return value;
}

uint32_t X86Arch::ctrl_reg_span(ResourceId rid) {
  return rid == ResourceId::CB ? CBA_CLOS_PER_MSR : 1;
}

uint64_t X86Arch::ctrl_reg_of(ResourceId rid, const std::vector<uint32_t>& vals,
                              uint32_t first) const {
  if (rid != ResourceId::CB) return first < vals.size() ? ctrl_reg_value(rid, vals[first]) : 0;
  uint64_t reg = 0;
  for (uint32_t k = 0; k < CBA_CLOS_PER_MSR && first + k < vals.size(); ++k)
    reg |= ctrl_reg_value(rid, vals[first + k]) << (8 * k);
  return reg;
}

std::vector<unsigned> X86Arch::ctrl_cpus(ResourceId rid, const CtrlDomain& d) const {
  return rid == ResourceId::CB ? d.cpus.cpus() : first_cpu_of(d.cpus);
}

uint32_t X86Arch::get_ctrl(ResourceId rid, ConfType type, int domain_id, uint32_t closid) const {
  const int r = static_cast<int>(rid);
  int d = ctrl_domain_index(rid, domain_id);
  uint32_t idx = hw_index(rid, type, closid);
  if (d < 0 || shadow_[r].empty() || idx >= shadow_[r][d].size()) return default_ctrl(rid);
  return shadow_[r][d][idx];
}

Result<void> X86Arch::update_ctrls(const std::vector<CtrlUpdate>& updates) {
  drop_baselines();
  struct Pending {
    ResourceId rid;
    int dom;
    uint32_t idx;
    uint32_t value;
  };
  std::vector<Pending> todo;
  for (const auto& u : updates) {
    const Resource& res = info_.res(u.rid);
    if (!res.alloc_capable) return Error::make(EINVAL);
    int d = ctrl_domain_index(u.rid, u.domain_id);
    if (d < 0) return Error::make(EINVAL);
    uint32_t idx = hw_index(u.rid, u.type, u.closid);
    if (idx >= res.num_closid) return Error::make(EINVAL);
    if (res.is_bitmap() ? (u.value & ~res.cache.full_mask()) != 0 : u.value > res.membw.max_bw)
      return Error::make(EINVAL);
    auto same = std::find_if(todo.begin(), todo.end(), [&](const Pending& p) {
      return p.rid == u.rid && p.dom == d && p.idx == idx;
    });
    if (same != todo.end()) {
      same->value = u.value;  // the last value for a register wins
    } else {
      todo.push_back(Pending{u.rid, d, idx, u.value});
    }
  }
  RESCTRLFS_RETURN_IF_ERROR(resync());
  std::vector<Pending> changed;
  for (const auto& p : todo)
    if (shadow_[static_cast<int>(p.rid)][p.dom][p.idx] != p.value) changed.push_back(p);
  if (changed.empty()) return Ok();
  // The shadows as they will be, per (resource, domain) touched.
  std::map<std::pair<int, int>, std::vector<uint32_t>> next;
  for (const auto& p : changed) {
    const int r = static_cast<int>(p.rid);
    next.try_emplace({r, p.dom}, shadow_[r][p.dom]).first->second[p.idx] = p.value;
  }
  // Every changed register in one batch (one broker round trip), in the
  // order of the updates; a CBA register once per CPU of its domain, with
  // the bytes of the other CLOSIDs it holds as they are.
  struct Reg {
    ResourceId rid;
    int dom;
    uint32_t first;
  };
  std::vector<Reg> regs;
  for (const auto& p : changed) {
    const uint32_t first = p.idx / ctrl_reg_span(p.rid) * ctrl_reg_span(p.rid);
    if (std::none_of(regs.begin(), regs.end(), [&](const Reg& g) {
          return g.rid == p.rid && g.dom == p.dom && g.first == first;
        }))
      regs.push_back(Reg{p.rid, p.dom, first});
  }
  std::vector<MsrOp> ops;
  std::vector<uint64_t> old_values;  // per op
  for (const Reg& g : regs) {
    const int r = static_cast<int>(g.rid);
    const uint64_t old_value = ctrl_reg_of(g.rid, shadow_[r][g.dom], g.first);
    const uint64_t value = ctrl_reg_of(g.rid, next.at({r, g.dom}), g.first);
    if (old_value == value) continue;  // two values of one throttle level
    for (unsigned cpu : ctrl_cpus(g.rid, info_.res(g.rid).ctrl_domains[g.dom])) {
      ops.push_back(MsrOp{cpu, ctrl_msr(g.rid, g.first), value, true});
      old_values.push_back(old_value);
    }
  }
  auto commit = [&] {
    for (auto& [key, vals] : next) shadow_[key.first][key.second] = std::move(vals);
  };
  if (ops.empty()) {
    commit();
    return Ok();
  }
  msr_->run(ops);
  size_t written = 0;
  while (written < ops.size() && ops[written].err == 0) ++written;
  if (written == ops.size()) {
    commit();
    return Ok();
  }
  // All or nothing: put back what this call already changed, newest first.
  // The shadow keeps the old values whatever happens; a register whose old
  // value could not be put back (or whose write may have landed when the
  // transport failed) is written again by resync().
  std::vector<MsrOp> undo;
  for (size_t i = written; i-- > 0;)
    undo.push_back(MsrOp{ops[i].cpu, ops[i].msr, old_values[i], true});
  if (!undo.empty()) {
    msr_->run(undo);
    for (const MsrOp& op : undo) stale_ = stale_ || op.err != 0;
  }
  if (ops[written].err != EPERM && ops[written].err != ECANCELED) {
    // A #GP leaves the register as it was, but a lost transport may not have.
    stale_ = stale_ || msr_->reconnects() != synced_reconnects_;
  }
  return write_failed();
}

Result<void> X86Arch::resync() {
  const uint64_t gen = msr_->reconnects();
  if (gen == synced_reconnects_ && !stale_) return Ok();
  // Every register this Arch owns, from its shadows: the controls of every
  // domain, CDP, BMEC, the extended QoS configuration (ABMC, SDCIAE), the
  // counter assignments (ABMC) and every online CPU's PQR_ASSOC.
  std::vector<MsrOp> ops;
  for (int r = 0; r < kNumResources; ++r) {
    const Resource& res = info_.resources[r];
    if (!res.alloc_capable) continue;
    if (res.is_bitmap() && res.cache.cdp_capable) {
      const uint32_t msr = res.rid == ResourceId::L3 ? IA32_L3_QOS_CFG : IA32_L2_QOS_CFG;
      for (const auto& d : res.ctrl_domains)
        for (unsigned cpu : limits_.amd ? d.cpus.cpus() : first_cpu_of(d.cpus))
          ops.push_back(MsrOp{cpu, msr, cdp_[r] ? QOS_CFG_CDP_ENABLE : 0, true});
    }
    for (size_t d = 0; d < res.ctrl_domains.size() && d < shadow_[r].size(); ++d) {
      for (unsigned cpu : ctrl_cpus(res.rid, res.ctrl_domains[d]))
        for (uint32_t i = 0; i < shadow_[r][d].size(); i += ctrl_reg_span(res.rid))
          ops.push_back(
              MsrOp{cpu, ctrl_msr(res.rid, i), ctrl_reg_of(res.rid, shadow_[r][d], i), true});
    }
  }
  if (info_.res(ResourceId::L3).mon.evt_cfg.capable) {
    for (size_t d = 0; d < mon_.size(); ++d)
      for (int e = 0; e < 2; ++e)
        ops.push_back(MsrOp{info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first(),
                            QOS_EVT_CFG_0 + e, mon_[d].evt_cfg[e], true});
  }
  const Resource& l3 = info_.res(ResourceId::L3);
  if (info_.res(ResourceId::L3).mon.cntr_assign.capable || l3.cache.io_alloc_capable) {
    CpuMask cpus(info_.nr_cpus);
    for (const auto& d : info_.res(ResourceId::L3).mon.mon_domains) cpus |= d.cpus;
    for (const auto& d : l3.ctrl_domains) cpus |= d.cpus;
    for (unsigned cpu : cpus.cpus())
      ops.push_back(MsrOp{cpu, L3_QOS_EXT_CFG, ext_cfg(abmc_enabled_, io_alloc_enabled_), true});
  }
  // Each counter as last configured, after ABMC mode is back on. Writing a
  // configuration clears the counter (counted again from 0 below).
  std::vector<std::pair<size_t, size_t>> cntrs;  // (domain, counter) per write
  if (info_.res(ResourceId::L3).mon.cntr_assign.capable && abmc_enabled_) {
    for (size_t d = 0; d < mon_.size(); ++d)
      for (size_t c = 0; c < mon_[d].cntr_cfg.size(); ++c)
        if (mon_[d].cntr_cfg[c]) {
          ops.push_back(MsrOp{info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first(),
                              L3_QOS_ABMC_CFG, *mon_[d].cntr_cfg[c], true});
          cntrs.emplace_back(d, c);
        }
  }
  for (unsigned cpu : info_.online.cpus())
    if (pqr_want_[cpu]) ops.push_back(MsrOp{cpu, IA32_PQR_ASSOC, *pqr_want_[cpu], true});
  // I/O RDT: the enable bits, then (below) the channels' tags.
  if (irdt_ && (io_tagging_.alloc || io_tagging_.mon))
    for (unsigned cpu : io_cfg_cpus())
      ops.push_back(MsrOp{
          cpu, IA32_L3_IO_RDT_CFG,
          (io_tagging_.alloc ? L3_IO_RDT_CFG_IRAE : 0) | (io_tagging_.mon ? L3_IO_RDT_CFG_IRME : 0),
          true});
  msr_->run(ops);
  for (const MsrOp& op : ops)
    if (op.err != 0) return write_failed();
  RESCTRLFS_RETURN_IF_ERROR(rewrite_io_tags());
  // A re-configured counter restarts at 0; its running total goes on.
  for (const auto& [d, c] : cntrs) {
    mon_[d].cntr[c].prev = 0;
    keep_mbm(d, 2, c);
  }
  for (unsigned cpu : info_.online.cpus()) pqr_cache_[cpu] = pqr_want_[cpu];
  synced_reconnects_ = gen;
  stale_ = false;
  ++resyncs_;
  return Ok();
}

Result<void> X86Arch::reset_all_ctrls() {
  drop_baselines();
  // One batch; the shadow follows each register that was written (a CBA
  // register: written on every CPU of its domain).
  struct Where {
    int r;
    size_t d;
    uint32_t first;
  };
  std::vector<MsrOp> ops;
  std::vector<Where> where;
  for (int r = 0; r < kNumResources; ++r) {
    const Resource& res = info_.resources[r];
    if (!res.alloc_capable) continue;
    const std::vector<uint32_t> dflt(res.num_closid, default_ctrl(res.rid));
    for (size_t d = 0; d < res.ctrl_domains.size(); ++d) {
      for (unsigned cpu : ctrl_cpus(res.rid, res.ctrl_domains[d])) {
        for (uint32_t i = 0; i < res.num_closid; i += ctrl_reg_span(res.rid)) {
          ops.push_back(MsrOp{cpu, ctrl_msr(res.rid, i), ctrl_reg_of(res.rid, dflt, i), true});
          where.push_back(Where{r, d, i});
        }
      }
    }
  }
  msr_->run(ops);
  bool failed = false;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].err != 0) {
      failed = true;
      continue;
    }
    const Where& w = where[k];
    const ResourceId rid = info_.resources[w.r].rid;
    std::vector<uint32_t>& sh = shadow_[w.r][w.d];
    for (uint32_t i = w.first; i < w.first + ctrl_reg_span(rid) && i < sh.size(); ++i)
      sh[i] = default_ctrl(rid);
  }
  // A CBA register reset on some CPUs of its domain but not on others:
  // resync() writes the shadow to all of them again.
  if (failed && info_.res(ResourceId::CB).alloc_capable) stale_ = true;
  if (failed) return write_failed();
  return Ok();
}

Result<void> X86Arch::write_on(const std::vector<unsigned>& cpus, uint32_t msr, uint64_t value,
                               uint64_t old_value) {
  std::vector<MsrOp> ops;
  for (unsigned cpu : cpus) ops.push_back(MsrOp{cpu, msr, value, true});
  msr_->run(ops);
  size_t written = 0;
  while (written < ops.size() && ops[written].err == 0) ++written;
  if (written == ops.size()) return Ok();
  std::vector<MsrOp> undo;
  for (size_t j = 0; j < written; ++j) undo.push_back(MsrOp{cpus[j], msr, old_value, true});
  msr_->run(undo);
  return write_failed();
}

Result<void> X86Arch::set_cdp_enabled(ResourceId rid, bool enable) {
  drop_baselines();
  if (rid != ResourceId::L3 && rid != ResourceId::L2) return Error::make(EINVAL);
  const Resource& res = info_.res(rid);
  if (!res.alloc_capable || !res.cache.cdp_capable) return Error::make(EINVAL);
  RESCTRLFS_RETURN_IF_ERROR(resync());
  const uint32_t msr = rid == ResourceId::L3 ? IA32_L3_QOS_CFG : IA32_L2_QOS_CFG;
  const uint64_t v = enable ? QOS_CFG_CDP_ENABLE : 0;
  const uint64_t old = cdp_[static_cast<int>(rid)] ? QOS_CFG_CDP_ENABLE : 0;
  // Intel scopes QOS_CFG to the cache domain; AMD to each logical CPU.
  std::vector<std::vector<unsigned>> per_domain;
  for (const auto& d : res.ctrl_domains)
    per_domain.push_back(limits_.amd ? d.cpus.cpus() : first_cpu_of(d.cpus));
  for (size_t i = 0; i < per_domain.size(); ++i) {
    if (!write_on(per_domain[i], msr, v, old).ok()) {
      for (size_t j = 0; j < i; ++j) (void)write_on(per_domain[j], msr, old, v);
      return write_failed();
    }
  }
  cdp_[static_cast<int>(rid)] = enable;
  return Ok();
}

bool X86Arch::cdp_enabled(ResourceId rid) const { return cdp_[static_cast<int>(rid)]; }

Result<void> X86Arch::set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) {
  drop_baselines();
  if (cpu >= info_.nr_cpus || !info_.online.test(cpu)) return Error::make(EINVAL);
  const uint64_t v = (uint64_t{closid} << PQR_ASSOC_CLOS_SHIFT) | rmid;
  pqr_want_[cpu] = v;
  RESCTRLFS_RETURN_IF_ERROR(resync());
  if (pqr_cache_[cpu] == v) return Ok();  // the hardware already holds it
  if (!msr_->write(cpu, IA32_PQR_ASSOC, v).ok()) {
    pqr_cache_[cpu].reset();
    return write_failed();
  }
  pqr_cache_[cpu] = v;
  return Ok();
}

void X86Arch::set_cpus_assoc(std::vector<CpuAssoc>& assocs) {
  drop_baselines();
  std::vector<size_t> todo;  // indexes into assocs still to write
  for (size_t i = 0; i < assocs.size(); ++i) {
    CpuAssoc& a = assocs[i];
    a.ok = false;
    a.error.clear();
    if (a.cpu >= info_.nr_cpus || !info_.online.test(a.cpu)) {
      a.error = "CPU " + std::to_string(a.cpu) + " is offline";
      continue;
    }
    pqr_want_[a.cpu] = (uint64_t{a.closid} << PQR_ASSOC_CLOS_SHIFT) | a.rmid;
    todo.push_back(i);
  }
  if (Result<void> r = resync(); !r.ok()) {
    for (size_t i : todo)
      assocs[i].error = "CPU " + std::to_string(assocs[i].cpu) +
                        ": IA32_PQR_ASSOC not written: the registers could not be read back (" +
                        r.error().message + ")";
    return;
  }
  // One batch; the broker stops a batch at its first failure, so what it
  // did not run goes again without the CPU that failed.
  while (!todo.empty()) {
    std::vector<MsrOp> ops;
    std::vector<size_t> sent;
    for (size_t i : todo) {
      const unsigned cpu = assocs[i].cpu;
      if (pqr_cache_[cpu] == pqr_want_[cpu]) {
        assocs[i].ok = true;  // the hardware already holds it
        continue;
      }
      ops.push_back(MsrOp{cpu, IA32_PQR_ASSOC, *pqr_want_[cpu], true});
      sent.push_back(i);
    }
    if (ops.empty()) return;
    msr_->run(ops);
    std::vector<size_t> again;
    for (size_t k = 0; k < ops.size(); ++k) {
      const unsigned cpu = ops[k].cpu;
      if (ops[k].err == 0) {
        pqr_cache_[cpu] = ops[k].value;
        assocs[sent[k]].ok = true;
      } else if (ops[k].err == ECANCELED) {
        again.push_back(sent[k]);
      } else {
        pqr_cache_[cpu].reset();
        char v[24];
        std::snprintf(v, sizeof(v), "0x%llx", static_cast<unsigned long long>(ops[k].value));
        assocs[sent[k]].error =
            "CPU " + std::to_string(cpu) + ": write of " + v +
            " to IA32_PQR_ASSOC (0xc8f) failed: " +
            (ops[k].err == EIO ? std::string("#GP") : std::string(std::strerror(ops[k].err)));
      }
    }
    todo.swap(again);
  }
}

// ---- Monitoring.

int X86Arch::mon_domain_index(int domain_id) const {
  const auto& doms = info_.res(ResourceId::L3).mon.mon_domains;
  for (size_t i = 0; i < doms.size(); ++i)
    if (doms[i].id == domain_id) return static_cast<int>(i);
  return -1;
}

Result<void> X86Arch::enable_rmid_sharing(unsigned cpu) {
  auto v = msr_->read(cpu, MSR_RMID_SNC_CONFIG);
  if (!v.ok()) return write_failed();
  if ((*v & RMID_SNC_CONFIG_LOCALIZED) == 0) return Ok();
  if (!msr_->write(cpu, MSR_RMID_SNC_CONFIG, *v & ~RMID_SNC_CONFIG_LOCALIZED).ok())
    return write_failed();
  return Ok();
}

uint32_t X86Arch::physical_rmid(int domain_id, uint32_t rmid) const {
  // Under SNC a node domain's id is its NUMA node; nodes are numbered
  // consecutively per L3, so the node's index within its L3 is id % ways.
  const unsigned ways = info_.res(ResourceId::L3).mon.snc_ways;
  if (ways <= 1) return rmid;
  return rmid + static_cast<uint32_t>(domain_id) % ways * info_.res(ResourceId::L3).mon.num_rmids;
}

CounterValue X86Arch::read_event(int domain_id, uint32_t rmid, EventId ev,
                                 std::optional<unsigned> cntr_id) {
  drop_baselines();
  const CounterValue error{ReadError::kError, 0};
  int d = mon_domain_index(domain_id);
  if (d < 0 || !info_.res(ResourceId::L3).mon.capable) return error;
  if (cntr_id ? *cntr_id >= mon_[d].cntr.size() : rmid >= info_.res(ResourceId::L3).mon.num_rmids)
    return error;
  const unsigned cpu = info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first();
  uint64_t sel;
  if (cntr_id) {
    sel = (uint64_t{*cntr_id} << QM_EVTSEL_RMID_SHIFT) | QM_EVTSEL_EXTENDED_EVTID | ABMC_EVT_ID;
  } else {
    sel = (uint64_t{physical_rmid(domain_id, rmid)} << QM_EVTSEL_RMID_SHIFT) |
          static_cast<uint64_t>(ev);
  }
  (void)resync();  // a read still answers when the registers could not be rewritten
  // Select and read in one batch (one broker round trip).
  std::vector<MsrOp> ops{MsrOp{cpu, IA32_QM_EVTSEL, sel, true}, MsrOp{cpu, IA32_QM_CTR, 0, false}};
  msr_->run(ops);
  if (ops[0].err != 0 || ops[1].err != 0) return error;
  const std::optional<uint64_t> raw = ops[1].value;
  if (*raw & QM_CTR_ERROR) return error;
  if (*raw & QM_CTR_UNAVAILABLE) return CounterValue{ReadError::kUnavailable, 0};
  const uint64_t scale = info_.res(ResourceId::L3).mon.occupancy_scale;
  if (ev == EventId::LLC_OCCUPANCY && !cntr_id) {
    return CounterValue{ReadError::kNone, (*raw & QM_CTR_DATA_MASK) * scale};
  }
  const unsigned width = info_.res(ResourceId::L3).mon.counter_width;
  const uint64_t wmask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  MbmState& st = cntr_id ? mon_[d].cntr[*cntr_id] : mon_[d].rmid[mbm_index(ev)][rmid];
  const uint64_t now = *raw & wmask;
  // Counted from the baseline reset_event() recorded, or from 0 (a counter
  // the hardware cleared: a BMEC change, a counter assignment, a domain that
  // came online), never from the first read: what happened between the
  // reset and the first read counts too.
  st.chunks += (now - st.prev) & wmask;  // modulo 2^width: one wrap at most
  st.prev = now;
  keep_mbm(static_cast<size_t>(d), cntr_id ? 2 : mbm_index(ev), cntr_id ? *cntr_id : rmid);
  uint64_t chunks = st.chunks;
  if (!cntr_id && correction_.factor != 0 && rmid > correction_.rmid_threshold) {
    // Errata SKX99/BDF102: fixed point with 20 fractional bits.
    const auto cf = static_cast<uint64_t>(correction_.factor * (1 << 20) + 0.5);
    chunks = static_cast<uint64_t>((static_cast<unsigned __int128>(chunks) * cf) >> 20);
  }
  return CounterValue{ReadError::kNone, chunks * scale};
}

CounterValue X86Arch::read_perf_pkg_event(int package_id, uint32_t rmid, EventId ev) {
  drop_baselines();
  if (!aet_) return {ReadError::kError, 0};
  return aet_->read(package_id, rmid, ev);
}

void X86Arch::read_baselines(uint32_t rmid) {
  drop_baselines();
  baselines_rmid_ = rmid;
  std::vector<MsrOp> ops;
  for (size_t d = 0; d < info_.res(ResourceId::L3).mon.mon_domains.size(); ++d) {
    const MonDomain& md = info_.res(ResourceId::L3).mon.mon_domains[d];
    for (EventId ev : info_.res(ResourceId::L3).mon.event_ids()) {
      if (ev != EventId::MBM_TOTAL && ev != EventId::MBM_LOCAL) continue;
      const unsigned cpu = md.cpus.first();
      const uint64_t sel = (uint64_t{physical_rmid(md.id, rmid)} << QM_EVTSEL_RMID_SHIFT) |
                           static_cast<uint64_t>(ev);
      ops.push_back(MsrOp{cpu, IA32_QM_EVTSEL, sel, true});
      ops.push_back(MsrOp{cpu, IA32_QM_CTR, 0, false});
      baselines_.push_back(Baseline{static_cast<int>(d), ev});
    }
  }
  msr_->run(ops);
  for (size_t i = 0; i < baselines_.size(); ++i) {
    const MsrOp& sel = ops[2 * i];
    const MsrOp& ctr = ops[2 * i + 1];
    // A pair the batch never ran (an earlier one failed) is read on its own
    // when its reset comes.
    if (sel.err == ECANCELED || ctr.err == ECANCELED) continue;
    baselines_[i].err = sel.err != 0 ? sel.err : ctr.err;
    baselines_[i].raw = ctr.value;
  }
}

void X86Arch::reset_event(int domain_id, uint32_t rmid, EventId ev) {
  int d = mon_domain_index(domain_id);
  if (d < 0 || ev == EventId::LLC_OCCUPANCY || rmid >= info_.res(ResourceId::L3).mon.num_rmids) {
    drop_baselines();
    return;
  }
  MbmState& st = mon_[d].rmid[mbm_index(ev)][rmid];
  st = MbmState{};
  // Kept as it is at every return below.
  struct Keep {
    X86Arch* a;
    size_t d;
    int kind;
    uint32_t rmid;
    ~Keep() { a->keep_mbm(d, kind, rmid); }
  } keep{this, static_cast<size_t>(d), mbm_index(ev), rmid};
  // The counter's value now is the baseline (Linux's resctrl_arch_reset_rmid
  // in arch/x86/kernel/cpu/resctrl/monitor.c records it at RMID allocation);
  // a counter that reads Error or Unavailable leaves it at 0. The first
  // reset of an RMID's sweep (first domain, first MBM event) reads the
  // whole sweep's baselines in one batch; the resets that follow at once,
  // in the same order, take theirs from it.
  const bool next_of_sweep =
      !baselines_.empty() && baselines_rmid_ == rmid && baselines_next_ < baselines_.size() &&
      baselines_[baselines_next_].dom == d && baselines_[baselines_next_].ev == ev;
  if (!next_of_sweep) {
    drop_baselines();
    const auto first_mbm = std::find_if(
        info_.res(ResourceId::L3).mon.events.begin(), info_.res(ResourceId::L3).mon.events.end(),
        [](const MonEvent& e) { return e.id == EventId::MBM_TOTAL || e.id == EventId::MBM_LOCAL; });
    const bool sweep_start =
        d == 0 && first_mbm != info_.res(ResourceId::L3).mon.events.end() && first_mbm->id == ev;
    if (sweep_start) read_baselines(rmid);
  }
  std::optional<uint64_t> raw;
  if (!baselines_.empty()) {  // read_baselines() just ran, or the sweep goes on
    const Baseline b = baselines_[baselines_next_++];
    if (baselines_next_ == baselines_.size()) drop_baselines();
    if (b.err == 0) {
      raw = b.raw;
    } else if (b.err != ECANCELED) {
      return;
    }
  }
  if (!raw) {
    const unsigned cpu = info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first();
    const uint64_t sel = (uint64_t{physical_rmid(domain_id, rmid)} << QM_EVTSEL_RMID_SHIFT) |
                         static_cast<uint64_t>(ev);
    std::vector<MsrOp> ops{MsrOp{cpu, IA32_QM_EVTSEL, sel, true},
                           MsrOp{cpu, IA32_QM_CTR, 0, false}};
    msr_->run(ops);
    if (ops[0].err != 0 || ops[1].err != 0) return;
    raw = ops[1].value;
  }
  if ((*raw & (QM_CTR_ERROR | QM_CTR_UNAVAILABLE)) != 0) return;
  const unsigned width = info_.res(ResourceId::L3).mon.counter_width;
  const uint64_t wmask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  st.prev = *raw & wmask;
}

void X86Arch::reset_domain_events(int domain_id) {
  drop_baselines();
  int d = mon_domain_index(domain_id);
  if (d < 0) return;
  for (auto& v : mon_[d].rmid) std::fill(v.begin(), v.end(), MbmState{});
  std::fill(mon_[d].cntr.begin(), mon_[d].cntr.end(), MbmState{});
  keep_mon_domain(static_cast<size_t>(d));
}

Result<void> X86Arch::set_event_config(int domain_id, EventId ev, uint32_t config) {
  drop_baselines();
  int d = mon_domain_index(domain_id);
  if (!info_.res(ResourceId::L3).mon.evt_cfg.capable || d < 0 || ev == EventId::LLC_OCCUPANCY)
    return Error::make(EINVAL);
  if ((config & ~info_.res(ResourceId::L3).mon.evt_cfg.supported_mask) != 0)
    return Error::make(EINVAL);
  const int e = mbm_index(ev);
  if (mon_[d].evt_cfg[e] == config) return Ok();
  RESCTRLFS_RETURN_IF_ERROR(resync());
  unsigned cpu = info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first();
  if (!msr_->write(cpu, QOS_EVT_CFG_0 + e, config).ok()) return write_failed();
  mon_[d].evt_cfg[e] = config;
  // A configuration change makes the hardware clear every MBM counter of
  // every RMID in the domain, both events, and report Unavailable at the
  // next read of each: every count starts again from 0 (Linux's
  // mbm_config_write_domain calls resctrl_arch_reset_rmid_all).
  for (auto& v : mon_[d].rmid) std::fill(v.begin(), v.end(), MbmState{});
  keep_mon_domain(static_cast<size_t>(d));
  return Ok();
}

// ---- Running totals kept outside the process (Arch::keep_counter_state).

size_t X86Arch::counter_state_bytes() const {
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  if (!mon.capable) return 0;
  return mon.mon_domains.size() * (2 * mon.num_rmids + mon.cntr_assign.num_cntrs) *
         sizeof(MbmState);
}

void X86Arch::keep_counter_state(std::byte* region, bool carry_over) {
  static_assert(std::is_trivially_copyable_v<MbmState>);
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  kept_mon_.clear();
  carried_over_ = false;
  if (!mon.capable) return;
  auto* at = reinterpret_cast<MbmState*>(region);
  for (size_t d = 0; d < mon.mon_domains.size(); ++d) {
    kept_mon_[mon.mon_domains[d].id] = at;
    if (carry_over) {
      // The totals a previous daemon left: reads go on from them (its
      // registers, simulated or real, went on counting meanwhile).
      for (int e = 0; e < 2; ++e)
        std::copy_n(at + e * mon.num_rmids, mon.num_rmids, mon_[d].rmid[e].begin());
      std::copy_n(at + 2 * mon.num_rmids, mon_[d].cntr.size(), mon_[d].cntr.begin());
      // The event configuration is the hardware's too (the simulated
      // machine's came back with its counts): adopt it again, so that a
      // restore of the same configuration writes nothing, which would
      // clear the domain's counts.
      unsigned cpu = mon.mon_domains[d].cpus.first();
      if (mon.evt_cfg.capable) {
        for (int e = 0; e < 2; ++e) {
          auto v = msr_->read(cpu, QOS_EVT_CFG_0 + e);
          if (v.ok()) mon_[d].evt_cfg[e] = static_cast<uint32_t>(*v & BMEC_MAX_EVT_CONFIG_BITS);
        }
      }
      if (mon.cntr_assign.capable && d == 0) {
        auto v = msr_->read(cpu, L3_QOS_EXT_CFG);
        if (v.ok()) abmc_enabled_ = (*v & L3_QOS_EXT_CFG_ABMC_EN) != 0;
      }
    } else {
      keep_mon_domain(d);
    }
    at += 2 * mon.num_rmids + mon_[d].cntr.size();
  }
  carried_over_ = carry_over;
}

void X86Arch::keep_mbm(size_t d, int kind, size_t i) {
  if (kept_mon_.empty()) return;
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  auto it = kept_mon_.find(mon.mon_domains[d].id);
  if (it == kept_mon_.end()) return;  // a domain that came online later: not kept
  const MbmState& st = kind == 2 ? mon_[d].cntr[i] : mon_[d].rmid[kind][i];
  it->second[kind == 2 ? 2 * mon.num_rmids + i : kind * mon.num_rmids + i] = st;
}

void X86Arch::keep_mon_domain(size_t d) {
  if (kept_mon_.empty()) return;
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  auto it = kept_mon_.find(mon.mon_domains[d].id);
  if (it == kept_mon_.end()) return;
  for (int e = 0; e < 2; ++e)
    std::copy_n(mon_[d].rmid[e].begin(), mon.num_rmids, it->second + e * mon.num_rmids);
  std::copy_n(mon_[d].cntr.begin(), mon_[d].cntr.size(), it->second + 2 * mon.num_rmids);
}

uint32_t X86Arch::event_config(int domain_id, EventId ev) const {
  int d = mon_domain_index(domain_id);
  if (d < 0 || ev == EventId::LLC_OCCUPANCY) return 0;
  return mon_[d].evt_cfg[mbm_index(ev)];
}

uint64_t X86Arch::ext_cfg(bool abmc, bool sdciae) {
  return (abmc ? L3_QOS_EXT_CFG_ABMC_EN : 0) | (sdciae ? L3_QOS_EXT_CFG_SDCIAE_EN : 0);
}

Result<void> X86Arch::set_io_alloc_enabled(ResourceId rid, bool enable) {
  drop_baselines();
  const Resource& res = info_.res(rid);
  if (rid != ResourceId::L3 || !res.alloc_capable || !res.cache.io_alloc_capable)
    return Error::make(EINVAL);
  if (enable == io_alloc_enabled_) return Ok();
  RESCTRLFS_RETURN_IF_ERROR(resync());
  const uint64_t v = ext_cfg(abmc_enabled_, enable);
  const uint64_t old = ext_cfg(abmc_enabled_, io_alloc_enabled_);
  for (size_t i = 0; i < res.ctrl_domains.size(); ++i) {
    if (!write_on(res.ctrl_domains[i].cpus.cpus(), L3_QOS_EXT_CFG, v, old).ok()) {
      for (size_t j = 0; j < i; ++j)
        (void)write_on(res.ctrl_domains[j].cpus.cpus(), L3_QOS_EXT_CFG, old, v);
      return write_failed();
    }
  }
  io_alloc_enabled_ = enable;
  return Ok();
}

bool X86Arch::io_alloc_enabled(ResourceId rid) const {
  return rid == ResourceId::L3 && io_alloc_enabled_;
}

Result<void> X86Arch::set_abmc_enabled(bool enable) {
  drop_baselines();
  if (!info_.res(ResourceId::L3).mon.cntr_assign.capable) return Error::make(EINVAL);
  RESCTRLFS_RETURN_IF_ERROR(resync());
  const uint64_t v = ext_cfg(enable, io_alloc_enabled_);
  const uint64_t old = ext_cfg(abmc_enabled_, io_alloc_enabled_);
  // L3_QOS_EXT_CFG is per logical CPU.
  const auto& doms = info_.res(ResourceId::L3).mon.mon_domains;
  for (size_t i = 0; i < doms.size(); ++i) {
    if (!write_on(doms[i].cpus.cpus(), L3_QOS_EXT_CFG, v, old).ok()) {
      for (size_t j = 0; j < i; ++j) (void)write_on(doms[j].cpus.cpus(), L3_QOS_EXT_CFG, old, v);
      return write_failed();
    }
  }
  abmc_enabled_ = enable;
  for (auto& m : mon_) {
    std::fill(m.cntr.begin(), m.cntr.end(), MbmState{});
    std::fill(m.cntr_cfg.begin(), m.cntr_cfg.end(), std::nullopt);
  }
  return Ok();
}

// Whether counter `cntr_id` of `cpu`'s domain is configured as `want` (an
// L3_QOS_ABMC_CFG value) says: the counter is selected with CfgEn clear,
// which configures nothing, and L3_QOS_ABMC_DSC describes it.
bool X86Arch::cntr_configured(unsigned cpu, unsigned cntr_id, uint64_t want) {
  if (!msr_->write(cpu, L3_QOS_ABMC_CFG, uint64_t{cntr_id} << ABMC_CFG_CTR_ID_SHIFT).ok())
    return false;
  auto dsc = msr_->read(cpu, L3_QOS_ABMC_DSC);
  constexpr uint64_t kMask = ABMC_CFG_CTR_EN | ABMC_CFG_IS_CLOS | ABMC_CFG_BW_TYPE_MASK |
                             (ABMC_CFG_BW_SRC_MASK << ABMC_CFG_BW_SRC_SHIFT);
  return dsc.ok() && (*dsc & kMask) == (want & kMask);
}

Result<void> X86Arch::config_cntr(int domain_id, unsigned cntr_id, uint32_t rmid, EventId ev,
                                  uint32_t evt_cfg, bool assign) {
  drop_baselines();
  int d = mon_domain_index(domain_id);
  if (!info_.res(ResourceId::L3).mon.cntr_assign.capable || d < 0 ||
      cntr_id >= mon_[d].cntr.size() || rmid >= info_.res(ResourceId::L3).mon.num_rmids ||
      (evt_cfg & ~BMEC_MAX_EVT_CONFIG_BITS) != 0)
    return Error::make(EINVAL);
  RESCTRLFS_RETURN_IF_ERROR(resync());
  uint64_t v = ABMC_CFG_CFG_EN | (uint64_t{cntr_id} << ABMC_CFG_CTR_ID_SHIFT) |
               (uint64_t{rmid} << ABMC_CFG_BW_SRC_SHIFT);
  if (assign) v |= ABMC_CFG_CTR_EN | evt_cfg;
  unsigned cpu = info_.res(ResourceId::L3).mon.mon_domains[d].cpus.first();
  if (carried_over_ && assign && cntr_configured(cpu, cntr_id, v)) {
    // A takeover's restore: the counter already counts this, since before
    // the previous daemon died. Writing it again would clear its count.
    mon_[d].cntr_cfg[cntr_id] = v;
    return Ok();
  }
  if (!msr_->write(cpu, L3_QOS_ABMC_CFG, v).ok()) return write_failed();
  mon_[d].cntr[cntr_id] = MbmState{};
  keep_mbm(static_cast<size_t>(d), 2, cntr_id);
  mon_[d].cntr_cfg[cntr_id] = v;
  (void)ev;  // the counter counts whatever evt_cfg selects
  return Ok();
}

// ---- The contract's monitoring calls, per monitor resource. The RMID
// counters are the L3's and telemetry is PERF_PKG's; neither keys its
// counters by CLOSID.

CounterValue X86Arch::read_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                                   EventId ev, MonCtx* ctx, std::optional<unsigned> cntr_id) {
  (void)closid;
  (void)ctx;
  if (rid == ResourceId::PERF_PKG) return read_perf_pkg_event(domain_id, rmid, ev);
  if (rid != ResourceId::L3 || is_perf_pkg_event(ev)) return {ReadError::kError, 0};
  return read_event(domain_id, rmid, ev, cntr_id);
}

void X86Arch::reset_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                            EventId ev) {
  (void)closid;
  if (rid == ResourceId::L3) reset_event(domain_id, rmid, ev);
}

void X86Arch::reset_all_counters(ResourceId rid, int domain_id) {
  if (rid == ResourceId::L3) reset_domain_events(domain_id);
}

Result<void> X86Arch::set_event_config(ResourceId rid, int domain_id, EventId ev, uint32_t config) {
  if (rid != ResourceId::L3) return Error::make(EINVAL);
  return set_event_config(domain_id, ev, config);
}

uint32_t X86Arch::event_config(ResourceId rid, int domain_id, EventId ev) const {
  return rid == ResourceId::L3 ? event_config(domain_id, ev) : 0;
}

Result<void> X86Arch::set_cntr_assign_enabled(ResourceId rid, bool enable) {
  if (rid != ResourceId::L3) return Error::make(EINVAL);
  return set_abmc_enabled(enable);
}

Result<void> X86Arch::config_cntr(ResourceId rid, int domain_id, unsigned cntr_id, uint32_t closid,
                                  uint32_t rmid, EventId ev, uint32_t evt_cfg, bool assign) {
  (void)closid;
  if (rid != ResourceId::L3) return Error::make(EINVAL);
  return config_cntr(domain_id, cntr_id, rmid, ev, evt_cfg, assign);
}

// ---- CPU hotplug.

int X86Arch::ctrl_domain_id_of(ResourceId rid, unsigned cpu) const {
  // Through the resource's control scope: L2 controls per L2 cache; L3, MB,
  // SMBA and CB per L3 cache; STLB per core (decode_platform() and
  // decode_stlb() set them and built the domain lists by them).
  return info_.cpu_id(cpu, info_.res(rid).ctrl_scope);
}

int X86Arch::mon_domain_id_of(unsigned cpu) const {
  // The L3 monitoring scope: the NUMA node under SNC, else the L3 cache.
  return info_.cpu_id(cpu, info_.res(ResourceId::L3).mon.scope);
}

Result<void> X86Arch::offline_cpu(unsigned cpu, ArchEvents* events) {
  drop_baselines();
  if (cpu >= info_.nr_cpus || !info_.online.test(cpu))
    return Error::make(EINVAL, "CPU " + std::to_string(cpu) + " is not online");
  if (info_.online.count() == 1) return Error::make(EBUSY, "cannot offline the last online CPU");
  for (int r = 0; r < kNumResources; ++r) {
    Resource& res = info_.resources[r];
    for (size_t i = 0; i < res.ctrl_domains.size(); ++i) {
      if (!res.ctrl_domains[i].cpus.test(cpu)) continue;
      res.ctrl_domains[i].cpus.reset(cpu);
      if (res.ctrl_domains[i].cpus.empty()) {
        if (events != nullptr) events->ctrl_domain_offline(res.rid, res.ctrl_domains[i].id);
        // A pseudo-locked region does not outlive its cache's power.
        locked_.erase({res.rid, res.ctrl_domains[i].id});
        res.ctrl_domains.erase(res.ctrl_domains.begin() + static_cast<long>(i));
        if (i < shadow_[r].size()) shadow_[r].erase(shadow_[r].begin() + static_cast<long>(i));
      }
      break;
    }
  }
  auto& mons = info_.res(ResourceId::L3).mon.mon_domains;
  for (size_t i = 0; i < mons.size(); ++i) {
    if (!mons[i].cpus.test(cpu)) continue;
    mons[i].cpus.reset(cpu);
    if (mons[i].cpus.empty()) {
      if (events != nullptr) events->mon_domain_offline(ResourceId::L3, mons[i].id);
      mons.erase(mons.begin() + static_cast<long>(i));
      if (i < mon_.size()) mon_.erase(mon_.begin() + static_cast<long>(i));
    }
    break;
  }
  auto& pkgs = info_.res(ResourceId::PERF_PKG).mon.mon_domains;
  for (size_t i = 0; i < pkgs.size(); ++i) {
    if (!pkgs[i].cpus.test(cpu)) continue;
    pkgs[i].cpus.reset(cpu);
    if (pkgs[i].cpus.empty()) {
      if (events != nullptr) events->mon_domain_offline(ResourceId::PERF_PKG, pkgs[i].id);
      pkgs.erase(pkgs.begin() + static_cast<long>(i));
    }
    break;
  }
  info_.online.reset(cpu);
  // The register goes with the CPU's power; the next online writes it.
  pqr_cache_[cpu].reset();
  pqr_want_[cpu].reset();
  return Ok();
}

Result<void> X86Arch::online_cpu(unsigned cpu, ArchEvents* events) {
  drop_baselines();
  if (cpu >= info_.nr_cpus) return Error::make(EINVAL, "no CPU " + std::to_string(cpu));
  if (info_.online.test(cpu))
    return Error::make(EINVAL, "CPU " + std::to_string(cpu) + " is already online");
  if (cpu >= info_.cpu_ids(Scope::PACKAGE).size() || info_.cpu_ids(Scope::PACKAGE)[cpu] < 0)
    return Error::make(EINVAL, "CPU " + std::to_string(cpu) + " is not present");

  // Every register first, so that a failing write leaves nothing half done.
  for (int r = 0; r < kNumResources; ++r) {
    const Resource& res = info_.resources[r];
    if (!res.alloc_capable) continue;
    const int id = ctrl_domain_id_of(res.rid, cpu);
    if (id < 0) continue;
    const int di = ctrl_domain_index(res.rid, id);
    const bool exists = di >= 0;
    if (!exists || res.rid == ResourceId::CB) {
      // A domain coming back starts from the defaults, whatever its
      // registers held before it went away. CBA's registers are the CPU's
      // own: a CPU joining a domain takes the domain's values.
      const std::vector<uint32_t> vals =
          exists ? shadow_[r][di] : std::vector<uint32_t>(res.num_closid, default_ctrl(res.rid));
      for (uint32_t i = 0; i < res.num_closid; i += ctrl_reg_span(res.rid))
        if (!msr_->write(cpu, ctrl_msr(res.rid, i), ctrl_reg_of(res.rid, vals, i)).ok())
          return write_failed();
    }
    // CDP state: once per new domain on Intel, on every CPU on AMD (where
    // QOS_CFG is per logical processor).
    if (res.is_bitmap() && res.cache.cdp_capable && (!exists || limits_.amd)) {
      const uint32_t msr = res.rid == ResourceId::L3 ? IA32_L3_QOS_CFG : IA32_L2_QOS_CFG;
      if (!msr_->write(cpu, msr, cdp_[r] ? QOS_CFG_CDP_ENABLE : 0).ok()) return write_failed();
    }
  }
  const int mon_id = info_.res(ResourceId::L3).mon.capable ? mon_domain_id_of(cpu) : -1;
  const bool new_mon = mon_id >= 0 && mon_domain_index(mon_id) < 0;
  MonDomState mon_state = fresh_mon_state();
  if (new_mon && info_.res(ResourceId::L3).mon.evt_cfg.capable) {
    // Adopt what the hardware holds, as at start-up.
    for (int e = 0; e < 2; ++e) {
      auto v = msr_->read(cpu, QOS_EVT_CFG_0 + e);
      if (v.ok()) mon_state.evt_cfg[e] = static_cast<uint32_t>(*v & BMEC_MAX_EVT_CONFIG_BITS);
    }
  }
  if (new_mon && info_.res(ResourceId::L3).mon.snc_ways > 1) {
    // A node domain coming (back) online: its L3 may have been powered down
    // and reset to the default RMID distribution; switch it again.
    RESCTRLFS_RETURN_IF_ERROR(enable_rmid_sharing(cpu));
  }
  if (info_.res(ResourceId::L3).mon.cntr_assign.capable && abmc_enabled_) {
    // L3_QOS_EXT_CFG is per logical CPU: the newcomer follows the mode.
    if (!msr_->write(cpu, L3_QOS_EXT_CFG, L3_QOS_EXT_CFG_ABMC_EN).ok()) return write_failed();
  }
  // I/O RDT: an L3 coming back (it may have been powered down, which
  // clears IA32_L3_IO_RDT_CFG) gets the enable bits again while channels
  // are tagged; the channels' own registers live in the I/O block, not the L3.
  if (irdt_ && (io_tagging_.alloc || io_tagging_.mon) &&
      cpu < info_.cpu_ids(Scope::L3_CACHE).size() && info_.cpu_ids(Scope::L3_CACHE)[cpu] >= 0) {
    bool l3_online = false;
    for (unsigned c : info_.online.cpus())
      l3_online =
          l3_online || (c < info_.cpu_ids(Scope::L3_CACHE).size() &&
                        info_.cpu_ids(Scope::L3_CACHE)[c] == info_.cpu_ids(Scope::L3_CACHE)[cpu]);
    if (!l3_online && !msr_->write(cpu, IA32_L3_IO_RDT_CFG,
                                   (io_tagging_.alloc ? L3_IO_RDT_CFG_IRAE : 0) |
                                       (io_tagging_.mon ? L3_IO_RDT_CFG_IRME : 0))
                           .ok())
      return write_failed();
  }
  if (!msr_->write(cpu, IA32_PQR_ASSOC, 0).ok()) return write_failed();
  pqr_cache_[cpu] = 0;
  pqr_want_[cpu] = 0;

  // Then the domain lists, announcing each domain that appeared.
  info_.online.set(cpu);
  for (int r = 0; r < kNumResources; ++r) {
    Resource& res = info_.resources[r];
    if (!res.alloc_capable) continue;
    const int id = ctrl_domain_id_of(res.rid, cpu);
    if (id < 0) continue;
    auto pos = std::lower_bound(res.ctrl_domains.begin(), res.ctrl_domains.end(), id,
                                [](const CtrlDomain& d, int v) { return d.id < v; });
    if (pos != res.ctrl_domains.end() && pos->id == id) {
      pos->cpus.set(cpu);
      continue;
    }
    const long idx = pos - res.ctrl_domains.begin();
    CtrlDomain d{id, CpuMask(info_.nr_cpus)};
    d.cpus.set(cpu);
    res.ctrl_domains.insert(pos, d);
    shadow_[r].insert(shadow_[r].begin() + idx,
                      std::vector<uint32_t>(res.num_closid, default_ctrl(res.rid)));
    if (events != nullptr) events->ctrl_domain_online(res.rid, id);
  }
  if (mon_id >= 0) {
    auto& mons = info_.res(ResourceId::L3).mon.mon_domains;
    auto pos = std::lower_bound(mons.begin(), mons.end(), mon_id,
                                [](const MonDomain& d, int v) { return d.id < v; });
    if (pos != mons.end() && pos->id == mon_id) {
      pos->cpus.set(cpu);
    } else {
      const long idx = pos - mons.begin();
      MonDomain d{mon_id, CpuMask(info_.nr_cpus), ctrl_domain_id_of(ResourceId::L3, cpu)};
      d.cpus.set(cpu);
      mons.insert(pos, d);
      mon_.insert(mon_.begin() + idx, std::move(mon_state));
      keep_mon_domain(static_cast<size_t>(idx));
      if (events != nullptr) events->mon_domain_online(ResourceId::L3, mon_id);
    }
  }
  if (info_.res(ResourceId::PERF_PKG).mon.capable) {
    // Telemetry domains are packages; the aggregators keep counting.
    const int pkg = info_.cpu_ids(Scope::PACKAGE)[cpu];
    auto& pkgs = info_.res(ResourceId::PERF_PKG).mon.mon_domains;
    auto pos = std::lower_bound(pkgs.begin(), pkgs.end(), pkg,
                                [](const MonDomain& d, int v) { return d.id < v; });
    if (pos != pkgs.end() && pos->id == pkg) {
      pos->cpus.set(cpu);
    } else {
      MonDomain d{pkg, CpuMask(info_.nr_cpus)};
      d.cpus.set(cpu);
      pkgs.insert(pos, d);
      if (events != nullptr) events->mon_domain_online(ResourceId::PERF_PKG, pkg);
    }
  }
  return Ok();
}

// ---- Cache pseudo-locking.

Result<void> X86Arch::pseudo_lock(ResourceId rid, int domain_id, uint32_t closid, uint32_t cbm) {
  drop_baselines();
  const Resource& res = info_.res(rid);
  const int di = ctrl_domain_index(rid, domain_id);
  // Only the caches: a TLB region cannot be loaded and locked.
  if (prefetch_disable_bits_ == 0 || !res.alloc_capable || !res.is_bitmap() ||
      rid == ResourceId::STLB || di < 0 || cdp_enabled(rid) || closid >= res.num_closid ||
      (cbm & ~res.cache.full_mask()) != 0)
    return Error::make(EINVAL);
  if (locked_.count({rid, domain_id}) != 0) return Error::make(EBUSY);
  RESCTRLFS_RETURN_IF_ERROR(update_ctrls({{rid, ConfType::NONE, domain_id, closid, cbm}}));

  const unsigned cpu = res.ctrl_domains[di].cpus.first();
  if (cpu >= info_.nr_cpus) return Error::make(ENODEV);
  Result<uint64_t> saved = msr_->read(cpu, MSR_MISC_FEATURE_CONTROL);
  if (!saved.ok()) return write_failed();
  if (!msr_->write(cpu, MSR_MISC_FEATURE_CONTROL, prefetch_disable_bits_).ok())
    return write_failed();
  // The CPU's current tags, as Linux takes them from its per-CPU cache.
  uint64_t assoc = 0;
  if (pqr_cache_[cpu]) {
    assoc = *pqr_cache_[cpu];
  } else if (auto a = msr_->read(cpu, IA32_PQR_ASSOC); a.ok()) {
    assoc = *a;
  }
  const uint64_t locking =
      (uint64_t{closid} << PQR_ASSOC_CLOS_SHIFT) | (assoc & PQR_ASSOC_RMID_MASK);
  bool ok = msr_->write(cpu, IA32_PQR_ASSOC, locking).ok();
  // Here the kernel reads the region's memory twice (page stride, then line
  // stride) so that it is allocated into the ways of `cbm`.
  if (ok) ok = msr_->write(cpu, IA32_PQR_ASSOC, assoc).ok();
  if (!ok) {
    // Leave the CPU as it was: its tags, then its prefetchers.
    (void)msr_->write(cpu, IA32_PQR_ASSOC, assoc);
    pqr_cache_[cpu].reset();
  }
  const bool restored = msr_->write(cpu, MSR_MISC_FEATURE_CONTROL, *saved).ok();
  if (!ok || !restored) return write_failed();
  locked_[{rid, domain_id}] = cbm;
  return Ok();
}

void X86Arch::pseudo_unlock(ResourceId rid, int domain_id) {
  drop_baselines();
  locked_.erase({rid, domain_id});
}

uint32_t X86Arch::pseudo_locked_cbm(ResourceId rid, int domain_id) const {
  auto it = locked_.find({rid, domain_id});
  return it == locked_.end() ? 0 : it->second;
}

}  // namespace resctrlfs::hw::x86

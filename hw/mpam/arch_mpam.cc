// Implements MpamArch (see arch_mpam.h).
#include "hw/mpam/arch_mpam.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <set>

#include "hw/mpam/registers.h"

namespace resctrlfs::hw::mpam {

namespace {

constexpr unsigned kMaxMbaBw = 100;

uint32_t div_round_closest(uint32_t n, uint32_t d) { return (n + d / 2) / d; }

int res_index(ResourceId r) { return static_cast<int>(r); }

// Without CDP a CPU or thread runs with one PARTID and one PMG for both
// instruction and data accesses: the CLOSID and the RMID.
MpamLabel label(uint32_t closid, uint32_t rmid) {
  const auto partid = static_cast<uint16_t>(closid);
  const auto pmg = static_cast<uint8_t>(rmid);
  return MpamLabel{partid, partid, pmg, pmg};
}

}  // namespace

// MBW_MAX is a 16-bit fixed-point fraction of which the top BWA_WD bits are
// implemented: band b (0 .. 2^BWA_WD - 1) reads as the percentage of its
// upper bound, (b + 1) x 100 / 2^BWA_WD, rounded to the nearest percent.
uint32_t mbw_max_to_percent(uint32_t mbw_max, unsigned bwa_wd) {
  const uint32_t band = (mbw_max & MPAMCFG_MBW_MAX_MAX) >> (16 - bwa_wd);
  return div_round_closest((band + 1) * kMaxMbaBw, 1U << bwa_wd);
}

// The band whose upper bound is nearest the percentage.
uint32_t percent_to_mbw_max(uint32_t percent, unsigned bwa_wd) {
  uint32_t band = div_round_closest(percent << bwa_wd, kMaxMbaBw);
  band = std::max<uint32_t>(band, 1) - 1;
  return (band << (16 - bwa_wd)) & MPAMCFG_MBW_MAX_MAX;
}

Result<std::unique_ptr<MpamArch>> MpamArch::create(MscBus& bus, MpamTagging& tagging,
                                                   const CpuTopology& topology) {
  std::unique_ptr<MpamArch> a(new MpamArch(bus, tagging));
  RESCTRLFS_RETURN_IF_ERROR(a->discover(topology));
  return a;
}

Result<void> MpamArch::discover(const CpuTopology& topo) {
  const unsigned ncpu = static_cast<unsigned>(topo.cpus.size());
  info_.nr_cpus = ncpu;
  info_.online = CpuMask(ncpu);
  for (unsigned c = 0; c < ncpu; ++c) {
    const CpuPlace& p = topo.cpus[c];
    info_.online.set(c);
    info_.cpu_ids(Scope::PACKAGE).push_back(p.package);
    info_.cpu_ids(Scope::L2_CACHE).push_back(p.l2);
    info_.cpu_ids(Scope::L3_CACHE).push_back(p.l3);
    info_.cpu_ids(Scope::NODE).push_back(p.node);
    info_.cpu_ids(Scope::CORE).push_back(p.core);
  }
  for (int i = 0; i < kNumResources; ++i) info_.resources[i].rid = static_cast<ResourceId>(i);

  // Probe every MSC's ID registers (mpam_msc_hw_probe), narrowing the
  // system's PARTID and PMG ranges to what every MSC takes.
  const auto& mscs = bus_.mscs();
  if (mscs.empty()) return Error::make(ENODEV, "the firmware describes no MPAM MSC");
  partid_max_ = 0xffff;
  pmg_max_ = 0xff;
  struct Probed {
    unsigned cpbm_wd = 0, bwa_wd = 0, csu = 0;
    bool mbw_max = false;
  };
  std::vector<Probed> probed(mscs.size());
  for (size_t m = 0; m < mscs.size(); ++m) {
    RESCTRLFS_ASSIGN_OR_RETURN(uint64_t idr, bus_.read64(m, MPAMF_IDR));
    partid_max_ = std::min<unsigned>(partid_max_, idr & MPAMF_IDR_PARTID_MAX);
    pmg_max_ = std::min<unsigned>(pmg_max_, (idr & MPAMF_IDR_PMG_MAX) >> MPAMF_IDR_PMG_MAX_SHIFT);
    Probed& p = probed[m];
    if (idr & MPAMF_IDR_HAS_CPOR_PART) {
      RESCTRLFS_ASSIGN_OR_RETURN(uint32_t v, bus_.read32(m, MPAMF_CPOR_IDR));
      p.cpbm_wd = v & MPAMF_CPOR_IDR_CPBM_WD;
    }
    if (idr & MPAMF_IDR_HAS_MBW_PART) {
      RESCTRLFS_ASSIGN_OR_RETURN(uint32_t v, bus_.read32(m, MPAMF_MBW_IDR));
      p.mbw_max = (v & MPAMF_MBW_IDR_HAS_MAX) != 0;
      p.bwa_wd = std::min<unsigned>(v & MPAMF_MBW_IDR_BWA_WD, 16);
    }
    if (idr & MPAMF_IDR_HAS_MSMON) {
      RESCTRLFS_ASSIGN_OR_RETURN(uint32_t v, bus_.read32(m, MPAMF_MSMON_IDR));
      if (v & MPAMF_MSMON_IDR_MSMON_CSU) {
        RESCTRLFS_ASSIGN_OR_RETURN(uint32_t n, bus_.read32(m, MPAMF_CSUMON_IDR));
        p.csu = n & MPAMF_CSUMON_IDR_NUM_MON;
      }
    }
  }

  // Classes: the MSCs of one cache level (or of memory). A feature the MSCs
  // of a class do not all have alike is dropped from the class.
  for (size_t m = 0; m < mscs.size(); ++m) {
    auto it = std::find_if(classes_.begin(), classes_.end(), [&](const ClassProps& c) {
      return c.locus == mscs[m].locus && c.level == mscs[m].level;
    });
    if (it == classes_.end()) {
      ClassProps c;
      c.locus = mscs[m].locus;
      c.level = mscs[m].level;
      c.cpbm_wd = probed[m].cpbm_wd;
      c.mbw_max = probed[m].mbw_max;
      c.bwa_wd = probed[m].bwa_wd;
      c.csu_monitors = probed[m].csu;
      classes_.push_back(c);
      it = classes_.end() - 1;
    }
    it->mscs.push_back(m);
    if (it->cpbm_wd != probed[m].cpbm_wd) it->cpbm_wd = 0;
    if (it->mbw_max != probed[m].mbw_max || it->bwa_wd != probed[m].bwa_wd) it->mbw_max = false;
    it->csu_monitors = std::min(it->csu_monitors, probed[m].csu);
  }
  for (ClassProps& c : classes_) {
    std::sort(c.mscs.begin(), c.mscs.end(),
              [&](size_t a, size_t b) { return mscs[a].id < mscs[b].id; });
    std::set<unsigned> cpus;
    for (size_t m : c.mscs) cpus.insert(mscs[m].cpus.begin(), mscs[m].cpus.end());
    c.covers_all_cpus = cpus.size() == ncpu;
  }

  // Controls (mpam_resctrl_pick_caches, mpam_resctrl_pick_mba).
  for (size_t i = 0; i < classes_.size(); ++i) {
    const ClassProps& c = classes_[i];
    if (c.locus != MscLocus::CACHE || !c.covers_all_cpus) continue;
    if (c.cpbm_wd == 0 || c.cpbm_wd > 32) continue;
    if (c.level == 3) l3_class_ = static_cast<int>(i);
    if (c.level == 2) l2_class_ = static_cast<int>(i);
  }
  std::set<int> l3_ids, nodes;
  for (const CpuPlace& p : topo.cpus) {
    l3_ids.insert(p.l3);
    nodes.insert(p.node);
  }
  for (size_t i = 0; i < classes_.size(); ++i) {
    const ClassProps& c = classes_[i];
    if (!c.mbw_max || c.bwa_wd == 0 || !c.covers_all_cpus) continue;
    const bool l3 = c.locus == MscLocus::CACHE && c.level == 3;
    // Memory traffic matches the L3's egress only with one L3 and one node.
    const bool memory_ok = c.locus == MscLocus::MEMORY && l3_ids.size() == 1 && nodes.size() == 1;
    if (!l3 && !memory_ok) continue;
    if (mb_class_ < 0 || l3) mb_class_ = static_cast<int>(i);
  }
  for (size_t i = 0; i < classes_.size(); ++i) {
    const ClassProps& c = classes_[i];
    if (c.locus == MscLocus::CACHE && c.level == 3 && c.covers_all_cpus && c.csu_monitors > 0)
      mon_class_ = static_cast<int>(i);
  }

  const unsigned nclosid = partid_max_ + 1;
  pmg_shift_ = static_cast<unsigned>(std::bit_width(pmg_max_));
  info_.rmid_depends_on_closid = true;
  auto domains_of = [&](const ClassProps& c) {
    std::vector<CtrlDomain> out;
    for (size_t m : c.mscs) {
      CtrlDomain d;
      d.id = mscs[m].id;
      d.cpus = CpuMask(ncpu);
      for (unsigned cpu : mscs[m].cpus) d.cpus.set(cpu);
      out.push_back(std::move(d));
    }
    return out;
  };
  for (auto [rid, cls, size] : {std::tuple{ResourceId::L3, l3_class_, topo.l3_size_bytes},
                                std::tuple{ResourceId::L2, l2_class_, topo.l2_size_bytes}}) {
    if (cls < 0) continue;
    const ClassProps& c = classes_[static_cast<size_t>(cls)];
    Resource& r = info_.resources[res_index(rid)];
    r.alloc_capable = true;
    r.num_closid = nclosid;
    r.ctrl_scope = rid == ResourceId::L3 ? Scope::L3_CACHE : Scope::L2_CACHE;
    r.schema_fmt = SchemaFormat::BITMAP;
    r.cache.cbm_len = c.cpbm_wd;
    r.cache.shareable_bits = r.cache.full_mask();
    r.cache.min_cbm_bits = 1;
    r.cache.sparse_masks = true;
    r.cache.cdp_capable = true;
    r.cache.cache_size_bytes = size;
    r.ctrl_domains = domains_of(c);
  }
  if (mb_class_ >= 0) {
    const ClassProps& c = classes_[static_cast<size_t>(mb_class_)];
    mb_bwa_wd_ = c.bwa_wd;
    Resource& r = info_.resources[res_index(ResourceId::MB)];
    r.alloc_capable = true;
    r.num_closid = nclosid;
    r.ctrl_scope = Scope::L3_CACHE;
    r.schema_fmt = SchemaFormat::PERCENT;
    r.membw.min_bw = mbw_max_to_percent(0, c.bwa_wd);
    r.membw.bw_gran = (kMaxMbaBw + (1U << c.bwa_wd) - 1) >> c.bwa_wd;
    r.membw.max_bw = kMaxMbaBw;
    r.membw.delay_linear = true;
    r.membw.throttle_mode = ThrottleMode::UNDEFINED;
    r.ctrl_domains = domains_of(c);
    if (c.locus == MscLocus::MEMORY)  // one L3: the domain takes the L3's id
      for (CtrlDomain& d : r.ctrl_domains) d.id = *l3_ids.begin();
  }
  if (mon_class_ >= 0) {
    const ClassProps& c = classes_[static_cast<size_t>(mon_class_)];
    MonCaps& mon = info_.res(ResourceId::L3).mon;
    mon.capable = true;
    mon.scope = Scope::L3_CACHE;
    mon.num_rmids = nclosid << pmg_shift_;
    mon.occupancy_scale = 1;
    mon.events = {EventId::LLC_OCCUPANCY};
    mon.realloc_limit_bytes = topo.l3_size_bytes;
    mon.default_threshold = static_cast<unsigned>(topo.l3_size_bytes / mon.num_rmids);
    for (size_t m : c.mscs) {
      MonDomain d;
      d.id = d.l3_id = mscs[m].id;
      d.cpus = CpuMask(ncpu);
      for (unsigned cpu : mscs[m].cpus) d.cpus.set(cpu);
      mon.mon_domains.push_back(std::move(d));
    }
  }
  bool any = info_.mon_capable();
  for (const Resource& r : info_.resources) any = any || r.alloc_capable;
  if (!any)
    return Error::make(ENODEV, "MPAM offers resctrl no control or monitor this driver uses");

  for (ResourceId rid : {ResourceId::L3, ResourceId::L2, ResourceId::MB}) {
    const Resource& r = info_.res(rid);
    if (!r.alloc_capable) continue;
    const int cls = rid == ResourceId::L3   ? l3_class_
                    : rid == ResourceId::L2 ? l2_class_
                                            : mb_class_;
    for (size_t m : classes_[static_cast<size_t>(cls)].mscs)
      shadow_[{res_index(rid), m}] = std::vector<uint32_t>(nclosid, reset_reg(rid));
  }
  for (const Resource& r : info_.resources) all_ctrl_domains_.push_back(r.ctrl_domains);
  all_mon_domains_ = info_.res(ResourceId::L3).mon.mon_domains;
  return Ok();
}

uint32_t MpamArch::reset_reg(ResourceId rid) const {
  // No limit: the top band, all ones in the implemented bits.
  if (rid == ResourceId::MB) return percent_to_mbw_max(kMaxMbaBw, mb_bwa_wd_);
  return info_.res(rid).cache.full_mask();
}

long MpamArch::ctrl_msc(ResourceId rid, int domain_id) const {
  const int cls = rid == ResourceId::L3   ? l3_class_
                  : rid == ResourceId::L2 ? l2_class_
                  : rid == ResourceId::MB ? mb_class_
                                          : -1;
  if (cls < 0) return -1;
  const auto& mscs = bus_.mscs();
  const ClassProps& c = classes_[static_cast<size_t>(cls)];
  for (size_t m : c.mscs)
    if (mscs[m].id == domain_id || (c.locus == MscLocus::MEMORY && rid == ResourceId::MB))
      return static_cast<long>(m);
  return -1;
}

Result<void> MpamArch::write_ctrl(size_t msc, ResourceId rid, uint32_t partid, uint32_t reg) {
  RESCTRLFS_RETURN_IF_ERROR(bus_.write32(msc, MPAMCFG_PART_SEL, partid));
  if (rid == ResourceId::MB) return bus_.write32(msc, MPAMCFG_MBW_MAX, reg);
  return bus_.write32(msc, MPAMCFG_CPBM, reg);
}

Result<void> MpamArch::update_ctrls(const std::vector<CtrlUpdate>& updates) {
  struct Write {
    size_t msc;
    ResourceId rid;
    uint32_t partid, old_reg, new_reg;
  };
  std::vector<Write> writes;
  for (const CtrlUpdate& u : updates) {
    const Resource& r = info_.res(u.rid);
    const long m = ctrl_msc(u.rid, u.domain_id);
    if (!r.alloc_capable || m < 0 || u.closid >= r.num_closid)
      return Error::make(EINVAL, "no such control");
    // The filesystem rounds a percentage up to a multiple of bw_gran, past
    // 100 when the granularity does not divide 100 (100 -> 105 with gran 7):
    // taken as 100, the top band. (Ours: the conversion in Linux's
    // mpam_resctrl.c would carry such a value out of MBW_MAX's 16 bits and
    // program the lowest band.)
    const uint32_t reg = u.rid == ResourceId::MB
                             ? percent_to_mbw_max(std::min(u.value, kMaxMbaBw), mb_bwa_wd_)
                             : u.value;
    std::vector<uint32_t>& sh = shadow_[{res_index(u.rid), static_cast<size_t>(m)}];
    if (sh[u.closid] == reg) continue;
    writes.push_back({static_cast<size_t>(m), u.rid, u.closid, sh[u.closid], reg});
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    if (!write_ctrl(w.msc, w.rid, w.partid, w.new_reg).ok()) {
      for (size_t j = i; j-- > 0;) {
        const Write& u = writes[j];
        if (write_ctrl(u.msc, u.rid, u.partid, u.old_reg).ok())
          shadow_[{res_index(u.rid), u.msc}][u.partid] = u.old_reg;
      }
      return write_failure();
    }
    shadow_[{res_index(w.rid), w.msc}][w.partid] = w.new_reg;
  }
  return Ok();
}

uint32_t MpamArch::get_ctrl(ResourceId rid, ConfType type, int domain_id, uint32_t closid) const {
  (void)type;  // CDP is never enabled
  const long m = ctrl_msc(rid, domain_id);
  if (m < 0) return default_ctrl(rid);
  auto it = shadow_.find({res_index(rid), static_cast<size_t>(m)});
  if (it == shadow_.end() || closid >= it->second.size()) return default_ctrl(rid);
  const uint32_t reg = it->second[closid];
  return rid == ResourceId::MB ? mbw_max_to_percent(reg, mb_bwa_wd_) : reg;
}

uint32_t MpamArch::default_ctrl(ResourceId rid) const {
  if (rid == ResourceId::MB) return kMaxMbaBw;
  return info_.res(rid).cache.full_mask();
}

Result<void> MpamArch::set_cdp_enabled(ResourceId rid, bool enable) {
  (void)rid;
  // Linux refuses CDP on MPAM unless built with CONFIG_EXPERT: a later
  // mount could then use PARTIDs out of range.
  if (enable) return Error::make(EOPNOTSUPP, "CDP not supported\n");
  return Ok();
}

bool MpamArch::cdp_enabled(ResourceId rid) const {
  (void)rid;
  return false;
}

Result<void> MpamArch::reset_all_ctrls() {
  for (auto& [k, regs] : shadow_) {
    const ResourceId rid = static_cast<ResourceId>(k.first);
    for (uint32_t p = 0; p < regs.size(); ++p) {
      if (!write_ctrl(k.second, rid, p, reset_reg(rid)).ok()) return write_failure();
      regs[p] = reset_reg(rid);
    }
  }
  return Ok();
}

uint32_t MpamArch::rmid_idx_encode(uint32_t closid, uint32_t rmid) const {
  return (closid << pmg_shift_) | rmid;
}

std::pair<uint32_t, uint32_t> MpamArch::rmid_idx_decode(uint32_t idx) const {
  return {idx >> pmg_shift_, idx & ((1U << pmg_shift_) - 1)};
}

Result<void> MpamArch::set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) {
  if (cpu >= info_.nr_cpus || !in_range(closid, rmid))
    return Error::make(EINVAL, "CPU, CLOSID or RMID out of range");
  return tagging_.set_cpu_label(cpu, label(closid, rmid));
}

void MpamArch::set_thread_tags(int tid, uint32_t closid, uint32_t rmid) {
  if (!in_range(closid, rmid)) return;
  tagging_.set_thread_label(tid, label(closid, rmid));
}

void MpamArch::thread_exited(int tid) { tagging_.forget_thread(tid); }

CounterValue MpamArch::read_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                                    EventId ev, MonCtx* ctx, std::optional<unsigned> cntr_id) {
  (void)ctx;  // one CSU monitor serves every read (CSU values settle)
  if (rid != ResourceId::L3 || ev != EventId::LLC_OCCUPANCY || cntr_id || mon_class_ < 0 ||
      !in_range(closid, rmid))
    return {ReadError::kError, 0};
  const auto& mscs = bus_.mscs();
  long msc = -1;
  for (size_t m : classes_[static_cast<size_t>(mon_class_)].mscs)
    if (mscs[m].id == domain_id) msc = static_cast<long>(m);
  if (msc < 0) return {ReadError::kError, 0};
  const size_t m = static_cast<size_t>(msc);
  // One CSU monitor (the driver's monitor context), pointed at the
  // PARTID+PMG and read; CSU values settle, so one monitor serves all reads.
  const uint32_t flt = closid | (rmid << MSMON_CFG_x_FLT_PMG_SHIFT);
  const uint32_t ctl = MSMON_CFG_CSU_CTL_TYPE_CSU | MSMON_CFG_x_CTL_MATCH_PARTID |
                       MSMON_CFG_x_CTL_MATCH_PMG | MSMON_CFG_x_CTL_EN;
  if (!bus_.write32(m, MSMON_CFG_MON_SEL, 0).ok() ||
      !bus_.write32(m, MSMON_CFG_CSU_FLT, flt).ok() ||
      !bus_.write32(m, MSMON_CFG_CSU_CTL, ctl).ok())
    return {ReadError::kError, 0};
  Result<uint32_t> v = bus_.read32(m, MSMON_CSU);
  if (!v.ok()) return {ReadError::kError, 0};
  if (*v & MSMON___NRDY) return {ReadError::kUnavailable, 0};
  return {ReadError::kNone, *v & MSMON___VALUE};
}

void MpamArch::reset_counter(ResourceId, int, uint32_t, uint32_t, EventId) {}
void MpamArch::reset_all_counters(ResourceId, int) {}
Result<void> MpamArch::set_event_config(ResourceId, int, EventId, uint32_t) {
  return Error::make(EINVAL, "MPAM has no configurable events");
}
uint32_t MpamArch::event_config(ResourceId, int, EventId) const { return 0; }
Result<void> MpamArch::set_io_alloc_enabled(ResourceId, bool) {
  return Error::make(EINVAL, "MPAM has no io_alloc");
}
bool MpamArch::io_alloc_enabled(ResourceId) const { return false; }
Result<void> MpamArch::set_cntr_assign_enabled(ResourceId, bool) {
  return Error::make(EINVAL, "MPAM has no assignable counters");
}
Result<void> MpamArch::config_cntr(ResourceId, int, unsigned, uint32_t, uint32_t, EventId, uint32_t,
                                   bool) {
  return Error::make(EINVAL, "MPAM has no assignable counters");
}
Result<void> MpamArch::offline_cpu(unsigned cpu, ArchEvents* events) {
  if (cpu >= info_.nr_cpus || !info_.online.test(cpu))
    return Error::make(EINVAL, "CPU " + std::to_string(cpu) + " is not online");
  if (info_.online.count() == 1) return Error::make(EBUSY, "cannot offline the last online CPU");
  for (Resource& r : info_.resources) {
    for (auto it = r.ctrl_domains.begin(); it != r.ctrl_domains.end(); ++it) {
      if (!it->cpus.test(cpu)) continue;
      it->cpus.reset(cpu);
      if (it->cpus.empty()) {
        if (events != nullptr) events->ctrl_domain_offline(r.rid, it->id);
        r.ctrl_domains.erase(it);
      }
      break;
    }
  }
  auto& mons = info_.res(ResourceId::L3).mon.mon_domains;
  for (auto it = mons.begin(); it != mons.end(); ++it) {
    if (!it->cpus.test(cpu)) continue;
    it->cpus.reset(cpu);
    if (it->cpus.empty()) {
      if (events != nullptr) events->mon_domain_offline(ResourceId::L3, it->id);
      mons.erase(it);
    }
    break;
  }
  info_.online.reset(cpu);
  return Ok();
}

Result<void> MpamArch::online_cpu(unsigned cpu, ArchEvents* events) {
  if (cpu >= info_.nr_cpus) return Error::make(EINVAL, "no CPU " + std::to_string(cpu));
  if (info_.online.test(cpu))
    return Error::make(EINVAL, "CPU " + std::to_string(cpu) + " is already online");
  // An MSC whose first CPU this is was reset when it powered down: every
  // PARTID gets back what it held (Linux's mpam_reprogram_msc), before any
  // domain is announced, so that a failed write leaves the CPU offline.
  const auto& mscs = bus_.mscs();
  for (const auto& [key, regs] : shadow_) {
    const MscInfo& msc = mscs[key.second];
    if (std::find(msc.cpus.begin(), msc.cpus.end(), cpu) == msc.cpus.end()) continue;
    if (std::any_of(msc.cpus.begin(), msc.cpus.end(),
                    [&](unsigned c) { return info_.online.test(c); }))
      continue;
    const ResourceId rid = static_cast<ResourceId>(key.first);
    for (uint32_t p = 0; p < regs.size(); ++p)
      if (regs[p] != reset_reg(rid) && !write_ctrl(key.second, rid, p, regs[p]).ok())
        return write_failure();
  }
  info_.online.set(cpu);
  auto join = [cpu](auto& domains, const auto& all, auto announce) {
    for (const auto& full : all) {
      if (!full.cpus.test(cpu)) continue;
      auto pos = std::lower_bound(domains.begin(), domains.end(), full.id,
                                  [](const auto& d, int id) { return d.id < id; });
      if (pos != domains.end() && pos->id == full.id) {
        pos->cpus.set(cpu);
        return;
      }
      auto d = full;
      d.cpus = CpuMask(full.cpus.size());
      d.cpus.set(cpu);
      const int id = d.id;
      domains.insert(pos, std::move(d));
      announce(id);
      return;
    }
  };
  for (size_t r = 0; r < all_ctrl_domains_.size(); ++r) {
    Resource& res = info_.resources[r];
    join(res.ctrl_domains, all_ctrl_domains_[r], [&](int id) {
      if (events != nullptr) events->ctrl_domain_online(res.rid, id);
    });
  }
  join(info_.res(ResourceId::L3).mon.mon_domains, all_mon_domains_, [&](int id) {
    if (events != nullptr) events->mon_domain_online(ResourceId::L3, id);
  });
  return Ok();
}

Result<void> MpamArch::pseudo_lock(ResourceId, int, uint32_t, uint32_t) {
  return Error::make(EINVAL, "MPAM has no cache pseudo-locking");
}
void MpamArch::pseudo_unlock(ResourceId, int) {}
uint32_t MpamArch::pseudo_locked_cbm(ResourceId, int) const { return 0; }

}  // namespace resctrlfs::hw::mpam

// Implements the simulated machine's clock, scheduler tags, workloads and
// the workload model that turns them into occupancy and MBM counts (the
// rules are described in machine.h).
#include <algorithm>
#include <bit>
#include <cmath>

#include "hw/sim/machine.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::sim {

using namespace resctrlfs::hw::x86;  // NOLINT: register names

namespace {

constexpr uint64_t kStepUs = 1000;  // the model moves in steps of >= 1 ms

bool is_zero(const Workload& w) { return w.cache_footprint_bytes == 0 && w.bandwidth_mbps <= 0; }

Result<void> check_workload(const Workload& w) {
  if (!(w.bandwidth_mbps >= 0) || !std::isfinite(w.bandwidth_mbps))
    return Error::make(EINVAL, "bandwidth_mbps must be a non-negative number");
  if (!(w.local_fraction >= 0 && w.local_fraction <= 1))
    return Error::make(EINVAL, "local_fraction must be within 0..1");
  if (!(w.write_fraction >= 0 && w.write_fraction <= 1))
    return Error::make(EINVAL, "write_fraction must be within 0..1");
  return Ok();
}

// How much of each traffic class an MBM event or ABMC counter with BMEC
// transaction mask `cfg` counts (1 or 0): reads and (non-temporal) writes,
// to local and to remote memory. See machine.h for why writes are the
// non-temporal class.
struct ClassWeights {
  double read_local = 0, read_remote = 0, write_local = 0, write_remote = 0;
};

ClassWeights bmec_weights(uint64_t cfg) {
  ClassWeights w;
  w.read_local = (cfg & BMEC_READS_TO_LOCAL_MEM) ? 1.0 : 0.0;
  w.read_remote = (cfg & BMEC_READS_TO_REMOTE_MEM) ? 1.0 : 0.0;
  w.write_local = (cfg & BMEC_NON_TEMP_WRITE_TO_LOCAL_MEM) ? 1.0 : 0.0;
  w.write_remote = (cfg & BMEC_NON_TEMP_WRITE_TO_REMOTE_MEM) ? 1.0 : 0.0;
  return w;
}

// The bytes of one entity's step in each class, weighted.
double counted(const ClassWeights& w, double bytes, double local_fraction, double write_fraction) {
  const double writes = bytes * write_fraction, reads = bytes - writes;
  return reads * (local_fraction * w.read_local + (1 - local_fraction) * w.read_remote) +
         writes * (local_fraction * w.write_local + (1 - local_fraction) * w.write_remote);
}

}  // namespace

// ---- Clock.

uint64_t SimMachine::now_us_locked() const {
  if (manual_) return manual_us_;
  auto d = std::chrono::steady_clock::now() - start_;
  // Modulo 2^64: offset_us_ may stand for a negative offset (see machine.h).
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) +
         offset_us_;
}

void SimMachine::set_manual_clock(bool manual) {
  std::lock_guard lock(mu_);
  if (manual == manual_) return;
  if (manual) {
    // Everything up to the switch is counted now, under real time: a
    // domain stepped less than kStepUs ago would otherwise carry that much
    // real time into the first advance, however long the switch took.
    manual_us_ = now_us_locked();
    settle_locked(manual_us_);
  } else {
    // Continue real time from where the manual clock stopped (ahead of or
    // behind real time): the time spent on the manual clock is not counted.
    uint64_t real = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - start_)
                                              .count());
    offset_us_ = manual_us_ - real;
  }
  manual_ = manual;
}

bool SimMachine::manual_clock() const {
  std::lock_guard lock(mu_);
  return manual_;
}

void SimMachine::advance_ms(uint64_t ms) {
  std::lock_guard lock(mu_);
  if (manual_) {
    manual_us_ += ms * 1000;
  } else {
    offset_us_ += ms * 1000;
  }
}

uint64_t SimMachine::now_ms() const {
  std::lock_guard lock(mu_);
  return now_us_locked() / 1000;
}

// ---- Scheduler tags and workloads.

void SimMachine::set_thread_tags(int tid, uint32_t closid, uint32_t rmid) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  thread_tags_[tid] = Tags{closid, rmid};
  tracking_dirty_ = true;
}

void SimMachine::thread_exited(int tid) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  thread_tags_.erase(tid);
  thread_work_.erase(tid);
  task_work_.erase(tid);
  lwp_.erase(tid);  // its ring goes with it
  tracking_dirty_ = true;
}

Result<void> SimMachine::attach_thread_workload(int tid, const Workload& w) {
  RESCTRLFS_RETURN_IF_ERROR(check_workload(w));
  std::lock_guard lock(mu_);
  if (w.cpu >= 0 && (static_cast<size_t>(w.cpu) >= cpus_.size() || !cpus_[w.cpu].online))
    return Error::make(EINVAL, "workload CPU is not online");
  for (unsigned c : w.allowed_cpus) {
    if (c >= cpus_.size() || !cpus_[c].present)
      return Error::make(EINVAL, "the thread's CPU " + std::to_string(c) + " does not exist");
  }
  settle_locked(now_us_locked());
  if (is_zero(w)) {
    thread_work_.erase(tid);
  } else {
    thread_work_[tid] = w;
  }
  tracking_dirty_ = true;
  return Ok();
}

void SimMachine::set_task_activity(std::vector<std::pair<int, Workload>> activity) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  task_work_.clear();
  for (auto& [tid, w] : activity) {
    if (is_zero(w) && w.stream_mbps <= 0) continue;
    if (!check_workload(w).ok() || !(w.stream_mbps >= 0) || !std::isfinite(w.stream_mbps))
      continue;  // the daemon's own numbers: never expected, never trusted
    if (w.cpu >= 0 && static_cast<size_t>(w.cpu) >= cpus_.size()) w.cpu = -1;
    task_work_[tid] = std::move(w);
  }
  tracking_dirty_ = true;
}

std::vector<int> SimMachine::task_model_threads() const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  out.reserve(thread_tags_.size());
  for (const auto& [tid, t] : thread_tags_)
    if ((t.closid != 0 || t.rmid != 0) && thread_work_.count(tid) == 0) out.push_back(tid);
  return out;
}

Result<void> SimMachine::attach_cpu_workload(unsigned cpu, const Workload& w) {
  RESCTRLFS_RETURN_IF_ERROR(check_workload(w));
  std::lock_guard lock(mu_);
  if (cpu >= cpus_.size() || !cpus_[cpu].online) return Error::make(EINVAL, "CPU is not online");
  settle_locked(now_us_locked());
  if (is_zero(w)) {
    cpu_work_.erase(cpu);
  } else {
    cpu_work_[cpu] = w;
  }
  tracking_dirty_ = true;
  return Ok();
}

Result<void> SimMachine::attach_channel_workload(uint32_t channel, const Workload& w) {
  RESCTRLFS_RETURN_IF_ERROR(check_workload(w));
  std::lock_guard lock(mu_);
  if (io_chans_.empty()) return Error::make(ENODEV, "this machine has no I/O RDT channels");
  auto chan = std::find_if(io_chans_.begin(), io_chans_.end(),
                           [&](const IoChan& c) { return c.ch.id == channel; });
  if (chan == io_chans_.end())
    return Error::make(EINVAL, "no I/O RDT channel " + std::to_string(channel));
  if (w.node >= 0 && io_node_index(*chan, w.node) < 0)
    return Error::make(EINVAL, "node " + std::to_string(w.node) +
                                   " is not a NUMA node of the L3 of " + "I/O RDT channel " +
                                   std::to_string(channel));
  settle_locked(now_us_locked());
  if (is_zero(w)) {
    chan_work_.erase(channel);
  } else {
    chan_work_[channel] = w;
  }
  tracking_dirty_ = true;
  return Ok();
}

// ---- The model.

void SimMachine::entities_of(size_t dom, std::vector<Entity>& out) const {
  out.clear();
  for (const auto& [cpu, w] : cpu_work_) {
    if (cpus_[cpu].l3 != static_cast<int>(dom)) continue;
    uint64_t pqr = cpus_[cpu].pqr_assoc;
    out.push_back(Entity{static_cast<uint32_t>(pqr >> PQR_ASSOC_CLOS_SHIFT),
                         static_cast<uint32_t>(pqr & PQR_ASSOC_RMID_MASK),
                         static_cast<double>(w.cache_footprint_bytes), w.bandwidth_mbps,
                         w.local_fraction, cpus_[cpu].snc, static_cast<int>(cpu)});
    out.back().write_fraction = w.write_fraction;
  }
  // An unpinned thread spreads over the domains that have a running CPU it
  // may use, and within one over its nodes that have such a CPU; a pinned
  // one stops while its CPU is offline.
  std::vector<uint8_t> dom_up;  // per L3 domain: a CPU of the thread is online
  std::vector<int> nodes_up;    // nodes of `dom` with a CPU of the thread online
  auto add_thread = [&](int tid, const Workload& w, bool task) {
    Tags t;
    if (auto it = thread_tags_.find(tid); it != thread_tags_.end()) t = it->second;
    if (w.cpu >= 0) {
      if (cpus_[w.cpu].l3 != static_cast<int>(dom) || !cpus_[w.cpu].online) return;
      if (task) {
        // The kernel's context switch: a thread of the default CLOSID or
        // RMID runs with its CPU's (the cpus file's) instead.
        const uint64_t pqr = cpus_[w.cpu].pqr_assoc;
        if (t.closid == 0) t.closid = static_cast<uint32_t>(pqr >> PQR_ASSOC_CLOS_SHIFT);
        if (t.rmid == 0) t.rmid = static_cast<uint32_t>(pqr & PQR_ASSOC_RMID_MASK);
      }
      out.push_back(Entity{t.closid, t.rmid, static_cast<double>(w.cache_footprint_bytes),
                           w.bandwidth_mbps, w.local_fraction, cpus_[w.cpu].snc, w.cpu, tid, 1.0});
      out.back().write_fraction = w.write_fraction;
      out.back().stream_mbps = w.stream_mbps;
      return;
    }
    dom_up.assign(l3_.size(), 0);
    nodes_up.clear();
    auto visit = [&](unsigned c) {
      if (c >= cpus_.size() || !cpus_[c].online || cpus_[c].l3 < 0) return;
      dom_up[static_cast<size_t>(cpus_[c].l3)] = 1;
      if (cpus_[c].l3 == static_cast<int>(dom) &&
          std::find(nodes_up.begin(), nodes_up.end(), cpus_[c].snc) == nodes_up.end())
        nodes_up.push_back(cpus_[c].snc);
    };
    if (w.allowed_cpus.empty()) {
      for (unsigned c = 0; c < cpus_.size(); ++c) visit(c);
    } else {
      for (unsigned c : w.allowed_cpus) visit(c);
    }
    const size_t powered = static_cast<size_t>(std::count(dom_up.begin(), dom_up.end(), 1));
    if (!dom_up[dom] || nodes_up.empty()) return;
    const double weight = 1.0 / static_cast<double>(powered * nodes_up.size());
    for (int k : nodes_up) {
      out.push_back(Entity{t.closid, t.rmid, static_cast<double>(w.cache_footprint_bytes) * weight,
                           w.bandwidth_mbps * weight, w.local_fraction, k, -1, tid, weight});
      out.back().write_fraction = w.write_fraction;
      out.back().stream_mbps = w.stream_mbps * weight;
    }
  };
  for (const auto& [tid, w] : thread_work_) add_thread(tid, w, false);
  for (const auto& [tid, w] : task_work_)
    if (thread_work_.count(tid) == 0) add_thread(tid, w, true);
  io_entities_of(dom, out);
}

long SimMachine::physical_rmid(const L3Dom& d, int snc, uint32_t rmid) const {
  if (d.snc_ways <= 1) return rmid < phys_rmids_ ? static_cast<long>(rmid) : -1;
  const unsigned per_node = phys_rmids_ / d.snc_ways;
  if (per_node == 0) return -1;
  if (snc_msr_ && (d.rmid_snc_cfg & RMID_SNC_CONFIG_LOCALIZED) == 0) {
    // Sharing mode: every node counts every logical RMID in its own slice.
    if (rmid >= per_node) return -1;
    return static_cast<long>(snc) * per_node + rmid;
  }
  // Default mode: RMID r belongs to the node owning slice r / per_node;
  // activity of other nodes tagged r is not counted anywhere.
  if (rmid >= phys_rmids_ || rmid / per_node != static_cast<unsigned>(snc)) return -1;
  return static_cast<long>(rmid);
}

void SimMachine::settle_locked(uint64_t now) {
  for (auto& d : l3_) advance_locked(d, now, 1);
  advance_telemetry_locked(now);
}

void SimMachine::advance_locked(L3Dom& d, uint64_t now, uint64_t min_step_us) {
  if (now < d.last_us + min_step_us) return;
  refresh_tracking_locked(now);
  step_model(d, static_cast<double>(now - d.last_us), now);
  d.last_us = now;
  keep_l3_locked(d);
}

double SimMachine::cba_factor(const L3Dom& d, const Entity& e) const {
  if (cba_regs_ == 0) return 1.0;
  // The CPU whose registers apply: the entity's own, or for a workload
  // spread over the domain its first online CPU.
  const int cpu = e.cpu >= 0 ? e.cpu : first_online(d.cpus);
  if (cpu < 0) return 1.0;
  const uint64_t level = cba_level(cpus_[static_cast<unsigned>(cpu)], e.closid);
  // Linear response: level L of 0..max leaves (max + 1 - L) / (max + 1) of
  // the bandwidth (our model; the specification gives no curve).
  const double levels = static_cast<double>(limits_.cba_max_level) + 1.0;
  return (levels - static_cast<double>(level)) / levels;
}

uint64_t SimMachine::cba_level(const Cpu& c, uint32_t closid) const {
  const uint32_t reg = closid / CBA_CLOS_PER_MSR;
  if (reg >= c.cba_thrtl.size()) return 0;
  return (c.cba_thrtl[reg] >> (8 * (closid % CBA_CLOS_PER_MSR))) & 0xFF;
}

double SimMachine::mba_delay(const L3Dom& d, const Entity& e,
                             const std::map<unsigned, std::vector<uint32_t>>& pinned) const {
  auto delay_of = [&](uint32_t closid) {
    if (closid >= d.mba_thrtl.size()) return 0.0;
    return std::min<double>(static_cast<double>(d.mba_thrtl[closid]),
                            static_cast<double>(limits_.mba_max_delay));
  };
  if (!mba_per_core_ || e.cpu < 0 || cpus_[e.cpu].core < 0) return delay_of(e.closid);
  // MBA 1.0/2.0: one delay for the whole core, resolved over the CLOSIDs
  // running on its threads (RDT architecture specification, 3.2.3.1 and
  // 3.2.3.2: the max, or the min with MBA_CFG bit 0 on a second-generation
  // part).
  const Core& core = cores_[cpus_[e.cpu].core];
  const bool want_min = (core.mba_cfg & MBA_CFG_MIN) != 0;
  double r = delay_of(e.closid);
  auto take = [&](uint32_t closid) {
    const double v = delay_of(closid);
    r = want_min ? std::min(r, v) : std::max(r, v);
  };
  for (unsigned c : core.cpus) {
    if (!cpus_[c].online) continue;
    auto it = pinned.find(c);
    if (it != pinned.end())
      for (uint32_t closid : it->second) take(closid);
    if (it == pinned.end() || cpu_work_.count(c) != 0)
      take(static_cast<uint32_t>(cpus_[c].pqr_assoc >> PQR_ASSOC_CLOS_SHIFT));
  }
  return r;
}

void SimMachine::step_model(L3Dom& d, double dt_us, uint64_t now) {
  const size_t dom = static_cast<size_t>(&d - l3_.data());
  std::vector<Entity> ents;
  entities_of(dom, ents);
  const size_t nrmid = d.occ.size();
  const double l3_size = static_cast<double>(l3_size_bytes_);
  const Resource& l3r = info_.res(ResourceId::L3);

  // Occupancy: what each CLOSID may fill, shared by its entities, on each
  // node's share of the L3 (the whole L3 without SNC): each entity's target.
  std::vector<double> fit(ents.size(), 1.0);  // share of each entity's footprint kept (LWP)
  std::vector<double> ent_target(ents.size(), 0.0);
  const double node_size = l3_size / d.snc_ways;
  std::vector<uint64_t> ent_mask(ents.size(), 0);
  auto mask_of = [&](uint32_t closid, int cpu) -> uint64_t {
    const uint64_t all = d.ways >= 64 ? ~uint64_t{0} : (uint64_t{1} << d.ways) - 1;
    if (!l3r.alloc_capable || d.l3_mask.empty()) return all;
    size_t idx = cdp_on(d, cpu) ? closid * 2 : closid;
    if (idx >= d.l3_mask.size()) return all;
    return d.l3_mask[idx] & all;
  };
  auto capacity = [&](uint32_t closid, int cpu) {
    return node_size * std::popcount(mask_of(closid, cpu)) / static_cast<double>(d.ways);
  };
  for (int k = 0; k < static_cast<int>(d.snc_ways) && !ents.empty(); ++k) {
    std::map<uint32_t, double> foot_by_clos;
    for (const auto& e : ents)
      if (e.snc == k) foot_by_clos[e.closid] += e.footprint;
    std::vector<double> occ_e(ents.size(), 0.0);
    double total = 0;
    for (size_t i = 0; i < ents.size(); ++i) {
      if (ents[i].snc != k) continue;
      double sum = foot_by_clos[ents[i].closid];
      double cap = capacity(ents[i].closid, ents[i].cpu);
      occ_e[i] = sum > cap ? ents[i].footprint * cap / sum : ents[i].footprint;
      total += occ_e[i];
    }
    double squeeze = total > node_size ? node_size / total : 1.0;
    for (size_t i = 0; i < ents.size(); ++i) {
      if (ents[i].snc != k) continue;
      ent_target[i] = occ_e[i] * squeeze;
      ent_mask[i] = mask_of(ents[i].closid, ents[i].cpu);
      if (ents[i].footprint > 0) fit[i] = std::min(1.0, ent_target[i] / ents[i].footprint);
    }
  }
  step_occupancy(d, ents, ent_target, ent_mask, dt_us);

  // Bandwidth: MBA / AMD limits per CLOSID, then the domain's peak. A task
  // model thread's streaming demand applies to the part of its footprint
  // that does not fit (the rest hits in the cache).
  if (ents.empty()) return;
  for (size_t i = 0; i < ents.size(); ++i)
    if (ents[i].stream_mbps > 0) ents[i].bw_mbps += ents[i].stream_mbps * (1.0 - fit[i]);
  const bool amd = profile_.amd();
  std::vector<double> ach(ents.size());
  // AMD limits hold a COS's reads only: the AMD64 PQoS specification
  // defines L3QOS_BW_CONTROL as a limit on "the cacheable read bandwidth" of
  // the COS, and lists large amounts of write traffic among what may keep a
  // COS below its limit (the writes share the memory with the reads, below).
  std::map<uint32_t, double> reads_by_clos;
  for (const auto& e : ents) reads_by_clos[e.closid] += e.bw_mbps * (1.0 - e.write_fraction);
  // CLOSIDs of the thread workloads pinned to each CPU (for the per-core
  // MBA resolution).
  std::map<unsigned, std::vector<uint32_t>> pinned;
  if (!amd && mba_per_core_) {
    for (const auto& e : ents)
      if (e.cpu >= 0 && e.tid >= 0) pinned[static_cast<unsigned>(e.cpu)].push_back(e.closid);
  }
  // The share of each entity's delivered traffic that is writes (an AMD
  // limit lowers the reads only).
  std::vector<double> wshare(ents.size());
  double total_bw = 0;
  for (size_t i = 0; i < ents.size(); ++i) {
    const Entity& e = ents[i];
    double a = e.bw_mbps;
    wshare[i] = e.write_fraction;
    if (!amd && (!d.mba_thrtl.empty() || cba_regs_ > 0)) {
      // Intel MBA delays the core's requests to memory, reads and writes
      // alike. CBA throttles the logical processor's traffic out of its
      // core caches; the effective throttle is whichever is stricter (RDT
      // architecture specification 3.2.4: "whichever of CBA or MBA
      // specifies more throttling").
      const double mba = d.mba_thrtl.empty() ? 1.0 : (100.0 - mba_delay(d, e, pinned)) / 100.0;
      a *= std::min(mba, cba_factor(d, e));
    } else if (amd && e.closid < d.amd_bw.size()) {
      uint64_t v = d.amd_bw[e.closid];
      if ((v & (uint64_t{1} << limits_.amd_bw_len)) == 0) {
        double cap = static_cast<double>(v) * 125.0;  // 1/8 GB/s = 125 MB/s
        double dem = reads_by_clos[e.closid];
        double writes = a * e.write_fraction, reads = a - writes;
        if (dem > cap) reads = dem > 0 ? reads * cap / dem : 0;
        a = reads + writes;
        wshare[i] = a > 0 ? writes / a : e.write_fraction;
      }
    }
    ach[i] = a;
    total_bw += a;
  }
  const double peak = profile_.sim.mem_bandwidth_mbps;
  const double squeeze = (peak > 0 && total_bw > peak) ? peak / total_bw : 1.0;
  if (amd && squeeze < 1.0) {
    // AMD64 PQoS: when the domain cannot deliver every COS its limit, the
    // hardware does not share what it has in proportion to the limits
    // ("L3QOS_BW_CONTROL"): a COS is only held to its own limit. Modelled as
    // contention by demand: the peak is shared in proportion to what each
    // entity asks for, none gets more than its limit allows, and what a
    // limited entity leaves is shared again among the others, by demand.
    std::vector<uint8_t> fixed(ents.size(), 0);
    double remaining = peak;
    for (bool again = true; again;) {
      again = false;
      double demand = 0;
      for (size_t i = 0; i < ents.size(); ++i)
        if (!fixed[i]) demand += ents[i].bw_mbps;
      if (demand <= 0) break;
      for (size_t i = 0; i < ents.size(); ++i) {
        if (fixed[i] || remaining * ents[i].bw_mbps / demand < ach[i]) continue;
        fixed[i] = 1;
        remaining -= ach[i];
        again = true;
      }
    }
    double demand = 0;
    for (size_t i = 0; i < ents.size(); ++i)
      if (!fixed[i]) demand += ents[i].bw_mbps;
    for (size_t i = 0; i < ents.size(); ++i)
      if (!fixed[i]) ach[i] = demand > 0 ? std::max(0.0, remaining) * ents[i].bw_mbps / demand : 0;
  }
  const bool limited = profile_.sim.mbm_hw_counters > 0;
  // Without BMEC: total counts every class, local the local reads and
  // writes (Intel's mbm_total and mbm_local, AMD's fixed events).
  ClassWeights ew[2];
  for (int ev = 0; ev < 2; ++ev) {
    if (info_.res(ResourceId::L3).mon.evt_cfg.capable) {
      ew[ev] = bmec_weights(d.evt_cfg[ev]);
    } else {
      ew[ev] = ClassWeights{1.0, ev == 0 ? 1.0 : 0.0, 1.0, ev == 0 ? 1.0 : 0.0};
    }
  }
  const bool abmc_on = (d.ext_cfg & L3_QOS_EXT_CFG_ABMC_EN) != 0;
  for (size_t i = 0; i < ents.size(); ++i) {
    const Entity& e = ents[i];
    // MB/s x microseconds = bytes.
    const double bytes = ach[i] * (amd ? 1.0 : squeeze) * dt_us;
    const long p = physical_rmid(d, e.snc, e.rmid);
    if (p >= 0 && static_cast<size_t>(p) < nrmid && (!limited || d.tracked[p])) {
      for (int ev = 0; ev < 2; ++ev)
        d.mbm[ev][p] += counted(ew[ev], bytes, e.local_fraction, wshare[i]);
    }
    if (abmc_on) {
      for (auto& k : d.cntrs) {
        if (!k.enabled || (k.is_clos ? e.closid : e.rmid) != k.rmid) continue;
        k.bytes += counted(bmec_weights(k.bw_type), bytes, e.local_fraction, wshare[i]);
      }
    }
    if (e.tid >= 0 && !lwp_.empty()) {
      const double throttle = e.bw_mbps > 0 ? std::min(1.0, ach[i] * squeeze / e.bw_mbps) : 1.0;
      lwp_step_locked(e, fit[i], throttle, dt_us);
    }
  }
  (void)now;
}

// Occupancy moves by fills and replacements only: lines installed under an
// RMID stay until normal cache replacement (or a flush) removes them (AMD64
// PQoS, "L3 Cache Occupancy Monitoring"), and an RMID no thread runs with
// loses occupancy only as other threads' fills redistribute the cache (RDT
// architecture specification, the MBM example's note on idle RMIDs). Per
// node and cache way: each RMID below its target (what its entities may
// hold there, spread evenly over the ways of their CLOSID's mask; the
// targets of one way scaled down together to the way's size) fills
// 1 - exp(-dt / occupancy_fill_ms) of what it lacks, first into free lines,
// then replacing lines of RMIDs above their target (an idle RMID's target
// is 0: its lines are the least recently used) in proportion to their
// excess. A way no one fills keeps its lines for ever.
void SimMachine::step_occupancy(L3Dom& d, const std::vector<Entity>& ents,
                                const std::vector<double>& ent_target,
                                const std::vector<uint64_t>& ent_mask, double dt_us) {
  const size_t nrmid = d.occ.size();
  const unsigned ways = d.ways;
  std::vector<double> target(nrmid * ways, 0.0);  // [physical RMID * ways + way]
  bool any = false;
  for (size_t i = 0; i < ents.size(); ++i) {
    const int n = std::popcount(ent_mask[i]);
    if (ent_target[i] <= 0 || n == 0) continue;
    const long p = physical_rmid(d, ents[i].snc, ents[i].rmid);
    if (p < 0 || static_cast<size_t>(p) >= nrmid) continue;
    const double share = ent_target[i] / n;
    for (unsigned w = 0; w < ways; ++w)
      if (ent_mask[i] & (uint64_t{1} << w)) target[static_cast<size_t>(p) * ways + w] += share;
    any = true;
  }
  if (!any) return;  // no one fills: nothing is replaced
  const double way_size = static_cast<double>(l3_size_bytes_) / d.snc_ways / ways;
  const double fill = 1.0 - std::exp(-dt_us / 1000.0 / profile_.sim.occupancy_fill_ms);
  // The physical RMIDs of each node are one contiguous slice (physical_rmid).
  const size_t per_node = d.snc_ways > 1 ? std::max<size_t>(1, nrmid / d.snc_ways) : nrmid;
  for (size_t lo = 0; lo < nrmid; lo += per_node) {
    const size_t hi = std::min(nrmid, lo + per_node);
    for (unsigned w = 0; w < ways; ++w) {
      double sum_t = 0, sum_o = 0;
      for (size_t p = lo; p < hi; ++p) {
        sum_t += target[p * ways + w];
        sum_o += d.occ_way[p * ways + w];
      }
      if (sum_t <= 0) continue;
      const double scale = sum_t > way_size ? way_size / sum_t : 1.0;
      double need = 0, excess = 0;
      for (size_t p = lo; p < hi; ++p) {
        const double t = target[p * ways + w] * scale, o = d.occ_way[p * ways + w];
        if (t > o) {
          need += (t - o) * fill;
        } else {
          excess += o - t;
        }
      }
      if (need <= 0) continue;
      const double free = std::max(0.0, way_size - sum_o);
      const double evict = std::min(excess, std::max(0.0, need - free));
      const double grow = need > free + evict ? (free + evict) / need : 1.0;
      for (size_t p = lo; p < hi; ++p) {
        const double t = target[p * ways + w] * scale;
        double& o = d.occ_way[p * ways + w];
        if (t > o) {
          o += (t - o) * fill * grow;
          if (grow == 1.0 && t - o < 1e-3) o = t;  // settled
        } else if (excess > 0) {
          o -= evict * (o - t) / excess;
          if (o < 1e-3) o = 0;
        }
      }
    }
  }
  for (size_t p = 0; p < nrmid; ++p) {
    double sum = 0;
    for (unsigned w = 0; w < ways; ++w) sum += d.occ_way[p * ways + w];
    d.occ[p] = sum < 1.0 ? 0.0 : sum;
  }
}

void SimMachine::refresh_tracking_locked(uint64_t now) {
  if (!tracking_dirty_) return;
  tracking_dirty_ = false;
  if (profile_.sim.mbm_hw_counters == 0) return;
  std::vector<Entity> ents;
  for (size_t i = 0; i < l3_.size(); ++i) {
    L3Dom& d = l3_[i];
    const size_t nrmid = d.tracked.size();
    // AMD64 PQoS: a domain can always track at least as many RMIDs as it
    // has processors.
    const unsigned limit =
        std::max<unsigned>(profile_.sim.mbm_hw_counters, static_cast<unsigned>(d.cpus.size()));
    // Starting to track an RMID clears its count (AMD64 PQoS, "Platform QOS
    // Monitoring of L3 External Bandwidth").
    auto start_tracking = [&](size_t r) {
      d.tracked[r] = 1;
      for (int ev = 0; ev < 2; ++ev) {
        d.mbm[ev][r] = 0;
        d.wraps_read[ev][r] = 0;
      }
    };
    std::vector<uint8_t> active(nrmid, 0);
    // Counters belong to physical RMIDs: mark where each node counts a tag.
    auto mark = [&](int snc, uint32_t rmid) {
      const long p = physical_rmid(d, snc, rmid);
      if (p >= 0 && static_cast<size_t>(p) < nrmid) active[p] = 1;
    };
    for (unsigned c : d.cpus) {
      if (!cpus_[c].online) continue;
      mark(cpus_[c].snc, static_cast<uint32_t>(cpus_[c].pqr_assoc & PQR_ASSOC_RMID_MASK));
    }
    entities_of(i, ents);
    for (const auto& e : ents) mark(e.snc, e.rmid);
    for (const auto& [tid, t] : thread_tags_)
      for (unsigned k = 0; k < d.snc_ways; ++k) mark(static_cast<int>(k), t.rmid);
    for (size_t r = 0; r < nrmid; ++r) {
      if (!active[r]) continue;
      d.last_active_us[r] = now;
      if (d.tracked[r]) continue;
      if (d.n_tracked < limit) {
        start_tracking(r);
        ++d.n_tracked;
        continue;
      }
      // Take the counter of the least recently active idle RMID.
      size_t victim = nrmid;
      for (size_t v = 0; v < nrmid; ++v) {
        if (!d.tracked[v] || active[v]) continue;
        if (victim == nrmid || d.last_active_us[v] < d.last_active_us[victim]) victim = v;
      }
      if (victim == nrmid) continue;
      d.tracked[victim] = 0;
      start_tracking(r);
    }
    keep_l3_locked(d);
  }
}

Result<uint64_t> SimMachine::read_qm_ctr_locked(Cpu& c) {
  if (c.l3 < 0) return QM_CTR_ERROR;
  L3Dom& d = l3_[c.l3];
  const uint64_t now = now_us_locked();
  advance_locked(d, now, kStepUs);
  refresh_tracking_locked(now);
  const uint64_t sel = qm_evtsel_of(c);
  const uint32_t evt = static_cast<uint32_t>(sel & QM_EVTSEL_EVTID_MASK);
  const uint64_t rmid = sel >> QM_EVTSEL_RMID_SHIFT;
  const unsigned width = info_.res(ResourceId::L3).mon.counter_width;
  const uint64_t wmask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const double scale = d.unit;
  auto has = [&](EventId e) {
    return std::find(info_.res(ResourceId::L3).mon.events.begin(),
                     info_.res(ResourceId::L3).mon.events.end(),
                     e) != info_.res(ResourceId::L3).mon.events.end();
  };
  if (sel & QM_EVTSEL_EXTENDED_EVTID) {
    if (evt != ABMC_EVT_ID || !(d.ext_cfg & L3_QOS_EXT_CFG_ABMC_EN) || rmid >= d.cntrs.size())
      return QM_CTR_ERROR;
    const AbmcCounter& k = d.cntrs[rmid];
    if (!k.enabled) return QM_CTR_UNAVAILABLE;
    return static_cast<uint64_t>(k.bytes / scale) & wmask;
  }
  // Beyond the global maximum: Error. Within it but beyond the L3's own
  // RMIDs: Intel Unavailable, AMD Error (see machine.h).
  if (rmid >= num_rmid_any_) return QM_CTR_ERROR;
  if (rmid >= d.occ.size()) return profile_.amd() ? QM_CTR_ERROR : QM_CTR_UNAVAILABLE;
  if (evt == QOS_L3_OCCUP_EVENT_ID && has(EventId::LLC_OCCUPANCY))
    // A thousandth of a byte: a footprint spread over the ways sums back to
    // a hair below itself, and the counter rounds down to its unit.
    return static_cast<uint64_t>((d.occ[rmid] + 1e-3) / scale) & QM_CTR_DATA_MASK;
  if ((evt == QOS_L3_MBM_TOTAL_EVENT_ID && has(EventId::MBM_TOTAL)) ||
      (evt == QOS_L3_MBM_LOCAL_EVENT_ID && has(EventId::MBM_LOCAL))) {
    const int ev = evt == QOS_L3_MBM_TOTAL_EVENT_ID ? 0 : 1;
    if (d.unavail_once[ev][rmid]) {
      d.unavail_once[ev][rmid] = 0;
      return QM_CTR_UNAVAILABLE;
    }
    if (profile_.sim.mbm_hw_counters > 0 && !d.tracked[rmid]) return QM_CTR_UNAVAILABLE;
    const auto units = static_cast<uint64_t>(d.mbm[ev][rmid] / scale);
    uint64_t overflow = 0;
    if (overflow_bit_ && width < 64) {
      const uint64_t wraps = units >> width;
      if (wraps != d.wraps_read[ev][rmid]) overflow = QM_CTR_OVERFLOW;
      d.wraps_read[ev][rmid] = wraps;  // the read clears the bit
      if (!kept_l3_.empty()) kept_l3_[static_cast<size_t>(&d - l3_.data())].wraps[ev][rmid] = wraps;
    }
    return (units & wmask) | overflow;
  }
  return QM_CTR_ERROR;
}

double SimMachine::occupancy_bytes(int domain_id, uint32_t rmid) {
  std::lock_guard lock(mu_);
  for (auto& d : l3_) {
    if (d.id != domain_id) continue;
    advance_locked(d, now_us_locked(), kStepUs);
    return rmid < d.occ.size() ? d.occ[rmid] : 0.0;
  }
  return 0.0;
}

}  // namespace resctrlfs::hw::sim

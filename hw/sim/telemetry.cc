// Implements the simulated machine's PMT telemetry aggregators: the
// per-package, per-RMID telemetry model (rules in machine.h) and the MMIO
// view of it in each aggregator's GUID layout.
#include <algorithm>
#include <cmath>
#include <set>

#include "hw/sim/machine.h"
#include "hw/x86/aet.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::sim {

using namespace resctrlfs::hw::x86;  // NOLINT: register and layout names

namespace {

// Physical constants of the model (see machine.h).
constexpr double kCoreHz = 2.4e9;
constexpr double kRefHz = 2.0e9;
constexpr double kBusyWatts = 2.5;
constexpr double kWattsPer10GBps = 1.5;
constexpr double kIdleWatts = 0.2;
constexpr double kVolts = 0.85;
constexpr double kMaxMissStall = 0.6;
constexpr double kUopsPerCycle = 2.5;
constexpr double kUopsPerInst = 1.25;
constexpr double kC1Share = 0.2;

size_t ev(EventId e) { return static_cast<size_t>(e); }

}  // namespace

void SimMachine::init_telemetry() {
  if (profile_.telemetry.empty()) return;
  unsigned nrmid = 0;
  for (const TelemetryAggregator& a : profile_.telemetry) {
    const AetEventGroup* layout = aet_event_group(a.guid);
    if (layout == nullptr) continue;
    telem_regions_.push_back(PmtRegion{layout->feature, a.guid, a.package, a.num_rmids, a.size});
    nrmid = std::max(nrmid, layout->num_rmids);
  }
  std::set<int> pkgs;
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    if (cpus_[c].present) pkgs.insert(profile_.cpus[c].package);
  }
  for (int p : pkgs) {
    TelemetryPkg t;
    t.package = p;
    for (unsigned c = 0; c < cpus_.size(); ++c)
      if (cpus_[c].present && profile_.cpus[c].package == p) t.cpus.push_back(c);
    t.count.assign(nrmid, {});
    t.seen.assign(nrmid, 0);
    telem_pkgs_.push_back(std::move(t));
  }
}

void SimMachine::advance_telemetry_locked(uint64_t now) {
  if (telem_pkgs_.empty() || now <= telem_last_us_) return;
  const double dt = static_cast<double>(now - telem_last_us_) / 1e6;  // seconds
  telem_last_us_ = now;
  auto pkg_of_cpu = [&](unsigned cpu) -> TelemetryPkg* {
    for (auto& t : telem_pkgs_)
      if (std::find(t.cpus.begin(), t.cpus.end(), cpu) != t.cpus.end()) return &t;
    return nullptr;
  };
  const double l3 = static_cast<double>(l3_size_bytes_);
  auto busy = [&](TelemetryPkg* t, uint32_t rmid, double share, const Workload& w) {
    if (t == nullptr || rmid >= t->count.size() || share <= 0) return;
    auto& c = t->count[rmid];
    const double cycles = share * kCoreHz * dt;
    const double ref = share * kRefHz * dt;
    const double miss = kMaxMissStall * w.bandwidth_mbps / (w.bandwidth_mbps + 10000.0);
    const double foot =
        l3 > 0 ? std::min(1.0, static_cast<double>(w.cache_footprint_bytes) / l3) : 0.0;
    const double hit = 0.05 + 0.10 * foot;
    const double uops = cycles * (1.0 - miss - hit) * kUopsPerCycle;
    const double joules = share * dt * (kBusyWatts + kWattsPer10GBps * w.bandwidth_mbps / 10000.0);
    c[ev(EventId::CORE_ENERGY)] += joules;
    c[ev(EventId::ACTIVITY)] += joules / (kVolts * kVolts);
    c[ev(EventId::STALLS_LLC_HIT)] += cycles * hit;
    c[ev(EventId::STALLS_LLC_MISS)] += cycles * miss;
    c[ev(EventId::UNHALTED_CORE_CYCLES)] += cycles;
    c[ev(EventId::UNHALTED_REF_CYCLES)] += ref;
    c[ev(EventId::UOPS_RETIRED)] += uops;
    c[ev(EventId::INST_RETIRED)] += uops / kUopsPerInst;
    c[ev(EventId::PCNT)] += ref / 1024.0;
    t->seen[rmid] = 1;
  };

  std::vector<uint8_t> busy_cpu(cpus_.size(), 0);
  for (const auto& [cpu, w] : cpu_work_) {
    busy_cpu[cpu] = 1;
    busy(pkg_of_cpu(cpu), static_cast<uint32_t>(cpus_[cpu].pqr_assoc & PQR_ASSOC_RMID_MASK), 1.0,
         w);
  }
  const double spread = 1.0 / static_cast<double>(telem_pkgs_.size());
  for (const auto& [tid, w] : thread_work_) {
    uint32_t rmid = 0;
    if (auto it = thread_tags_.find(tid); it != thread_tags_.end()) rmid = it->second.rmid;
    if (w.cpu >= 0) {
      if (!cpus_[w.cpu].online) continue;  // cannot run until its CPU is back
      busy_cpu[w.cpu] = 1;
      busy(pkg_of_cpu(static_cast<unsigned>(w.cpu)), rmid, 1.0, w);
    } else if (w.allowed_cpus.empty()) {
      for (auto& t : telem_pkgs_) busy(&t, rmid, spread, w);
    } else {
      // Spread over the packages that hold an online CPU the thread may use.
      std::vector<TelemetryPkg*> pkgs;
      for (unsigned c : w.allowed_cpus) {
        if (c >= cpus_.size() || !cpus_[c].online) continue;
        TelemetryPkg* p = pkg_of_cpu(c);
        if (p != nullptr && std::find(pkgs.begin(), pkgs.end(), p) == pkgs.end()) pkgs.push_back(p);
      }
      for (TelemetryPkg* p : pkgs) busy(p, rmid, 1.0 / static_cast<double>(pkgs.size()), w);
    }
  }
  for (auto& t : telem_pkgs_) {
    for (unsigned cpu : t.cpus) {
      if (busy_cpu[cpu] || !cpus_[cpu].online) continue;
      const uint32_t rmid = static_cast<uint32_t>(cpus_[cpu].pqr_assoc & PQR_ASSOC_RMID_MASK);
      if (rmid >= t.count.size()) continue;
      auto& c = t.count[rmid];
      c[ev(EventId::CORE_ENERGY)] += kIdleWatts * dt;
      c[ev(EventId::ACTIVITY)] += kIdleWatts * dt / (kVolts * kVolts);
      c[ev(EventId::C1_RES)] += kC1Share * kRefHz * dt;
      c[ev(EventId::AUTO_C6_RES)] += (1.0 - kC1Share) * kRefHz * dt;
      t.seen[rmid] = 1;
    }
  }
  keep_telemetry_locked();
}

std::vector<PmtRegion> SimMachine::pmt_regions() const {
  std::lock_guard lock(mu_);
  return telem_regions_;
}

Result<uint64_t> SimMachine::pmt_read64(size_t region, uint64_t offset) {
  std::lock_guard lock(mu_);
  if (region >= telem_regions_.size() || offset % sizeof(uint64_t) != 0 ||
      offset + sizeof(uint64_t) > telem_regions_[region].size)
    return Error::log_only(EIO, "PMT read outside the aggregator");
  advance_telemetry_locked(now_us_locked());
  const PmtRegion& r = telem_regions_[region];
  const AetEventGroup* layout = aet_event_group(r.guid);
  const uint64_t word = offset / sizeof(uint64_t);
  if (layout == nullptr || word >= uint64_t{layout->num_rmids} * layout->num_events())
    return uint64_t{0};  // status words: not modelled
  const auto rmid = static_cast<uint32_t>(word / layout->num_events());
  const AetEventDesc& d = layout->events[word % layout->num_events()];
  if (rmid >= r.num_rmids) return uint64_t{0};  // beyond what this aggregator tracks
  const TelemetryPkg* pkg = nullptr;
  for (const auto& t : telem_pkgs_)
    if (t.package == r.package_id) pkg = &t;
  if (pkg == nullptr || rmid >= pkg->seen.size() || !pkg->seen[rmid]) return uint64_t{0};
  unsigned same = 0;
  for (const PmtRegion& o : telem_regions_)
    if (o.guid == r.guid && o.package_id == r.package_id) ++same;
  const double v = pkg->count[rmid][ev(d.id)] / std::max(1U, same);
  const auto fixed = static_cast<uint64_t>(std::ldexp(v, static_cast<int>(d.binary_bits)));
  return PMT_DATA_VALID | (fixed & PMT_DATA_MASK);
}

}  // namespace resctrlfs::hw::sim

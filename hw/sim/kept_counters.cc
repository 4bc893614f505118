// Implements the simulated machine's counters kept outside the process
// (SimControl::keep_counter_state, hw/counter_store.h): a region laid out
// from the profile alone, so that every daemon of one platform and one
// build computes the same layout.
//
// Region: for each L3 domain, in order: mbm[0], mbm[1] (doubles, per
// physical RMID), wraps_read[0], wraps_read[1] (uint64), occ_way (doubles,
// RMIDs x ways), tracked (uint64 0/1 per RMID), the configuration (uint64
// evt_cfg[0], evt_cfg[1], ext_cfg), per ABMC counter its configuration
// (uint64) and count (double); then for each telemetry
// package: count (15 doubles per RMID), seen (uint64 per RMID).
#include <algorithm>
#include <cstring>

#include "hw/sim/machine.h"

namespace resctrlfs::hw::sim {

namespace {

constexpr size_t kTelemetryEvents = 15;  // TelemetryPkg::count's row

// The bytes of one domain's block, and of one package's.
constexpr size_t kCfgWords = 3;  // evt_cfg[0], evt_cfg[1], ext_cfg

size_t l3_bytes(size_t nrmid, size_t ways, size_t ncntr) {
  return nrmid * (2 * sizeof(double) + 2 * sizeof(uint64_t) + ways * sizeof(double) +
                  sizeof(uint64_t)) +
         kCfgWords * sizeof(uint64_t) + ncntr * (sizeof(uint64_t) + sizeof(double));
}

// An ABMC counter's configuration in one word, and back.
uint64_t pack_cntr(bool enabled, bool is_clos, uint32_t bw_type, uint32_t src) {
  return (enabled ? 1ULL : 0) | (is_clos ? 2ULL : 0) | (uint64_t{bw_type & 0xffffU} << 16) |
         (uint64_t{src} << 32);
}
size_t pkg_bytes(size_t nrmid) { return nrmid * (kTelemetryEvents * sizeof(double) + 8); }

template <typename T>
T* take(std::byte*& at, size_t n) {
  T* p = reinterpret_cast<T*>(at);
  at += n * sizeof(T);
  return p;
}

}  // namespace

size_t SimMachine::counter_state_bytes() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const L3Dom& d : l3_) n += l3_bytes(d.occ.size(), d.ways, d.cntrs.size());
  for (const TelemetryPkg& t : telem_pkgs_) n += pkg_bytes(t.count.size());
  return n;
}

void SimMachine::keep_counter_state(std::byte* region, bool carry_over) {
  static_assert(std::tuple_size_v<decltype(TelemetryPkg::count)::value_type> == kTelemetryEvents);
  std::lock_guard lock(mu_);
  std::byte* at = region;
  kept_l3_.clear();
  kept_pkg_.clear();
  for (L3Dom& d : l3_) {
    const size_t nrmid = d.occ.size();
    KeptL3 k{};
    for (int e = 0; e < 2; ++e) k.mbm[e] = take<double>(at, nrmid);
    for (int e = 0; e < 2; ++e) k.wraps[e] = take<uint64_t>(at, nrmid);
    k.occ_way = take<double>(at, nrmid * d.ways);
    k.tracked = take<uint64_t>(at, nrmid);
    k.cfg = take<uint64_t>(at, kCfgWords);
    k.cntr_cfg = take<uint64_t>(at, d.cntrs.size());
    k.cntr_bytes = take<double>(at, d.cntrs.size());
    kept_l3_.push_back(k);
    if (!carry_over) continue;
    // What the previous daemon's machine left: its counts go on from here
    // (the clock is this machine's own: each domain steps from now).
    for (int e = 0; e < 2; ++e) {
      std::copy_n(k.mbm[e], nrmid, d.mbm[e].begin());
      std::copy_n(k.wraps[e], nrmid, d.wraps_read[e].begin());
    }
    std::copy_n(k.occ_way, nrmid * d.ways, d.occ_way.begin());
    d.n_tracked = 0;
    for (size_t r = 0; r < nrmid; ++r) {
      d.tracked[r] = k.tracked[r] != 0 ? 1 : 0;
      d.n_tracked += d.tracked[r];
      double sum = 0;
      for (unsigned w = 0; w < d.ways; ++w) sum += d.occ_way[r * d.ways + w];
      d.occ[r] = sum < 1.0 ? 0.0 : sum;  // as step_occupancy sums it
    }
    // The configuration the counts were made under, as the previous
    // daemon left it: a restore that finds it here does not write it again.
    d.evt_cfg[0] = k.cfg[0];
    d.evt_cfg[1] = k.cfg[1];
    d.ext_cfg = k.cfg[2];
    for (size_t c = 0; c < d.cntrs.size(); ++c) {
      AbmcCounter& a = d.cntrs[c];
      const uint64_t w = k.cntr_cfg[c];
      a.enabled = (w & 1) != 0;
      a.is_clos = (w & 2) != 0;
      a.bw_type = static_cast<uint32_t>((w >> 16) & 0xffffU);
      a.rmid = static_cast<uint32_t>(w >> 32);
      a.bytes = k.cntr_bytes[c];
    }
  }
  for (TelemetryPkg& t : telem_pkgs_) {
    const size_t nrmid = t.count.size();
    KeptPkg k{};
    k.count = take<double>(at, nrmid * kTelemetryEvents);
    k.seen = take<uint64_t>(at, nrmid);
    kept_pkg_.push_back(k);
    if (!carry_over) continue;
    for (size_t r = 0; r < nrmid; ++r) {
      std::copy_n(k.count + r * kTelemetryEvents, kTelemetryEvents, t.count[r].begin());
      t.seen[r] = k.seen[r] != 0 ? 1 : 0;
    }
  }
  if (carry_over) {
    tracking_dirty_ = true;
    return;
  }
  for (const L3Dom& d : l3_) keep_l3_locked(d);
  keep_telemetry_locked();
}

void SimMachine::keep_l3_locked(const L3Dom& d) {
  if (kept_l3_.empty()) return;
  const KeptL3& k = kept_l3_[static_cast<size_t>(&d - l3_.data())];
  const size_t nrmid = d.occ.size();
  for (int e = 0; e < 2; ++e) {
    std::copy_n(d.mbm[e].begin(), nrmid, k.mbm[e]);
    std::copy_n(d.wraps_read[e].begin(), nrmid, k.wraps[e]);
  }
  std::copy_n(d.occ_way.begin(), nrmid * d.ways, k.occ_way);
  for (size_t r = 0; r < nrmid; ++r) k.tracked[r] = d.tracked[r];
  k.cfg[0] = d.evt_cfg[0];
  k.cfg[1] = d.evt_cfg[1];
  k.cfg[2] = d.ext_cfg;
  for (size_t c = 0; c < d.cntrs.size(); ++c) {
    const AbmcCounter& a = d.cntrs[c];
    k.cntr_cfg[c] = pack_cntr(a.enabled, a.is_clos, a.bw_type, a.rmid);
    k.cntr_bytes[c] = a.bytes;
  }
}

void SimMachine::keep_telemetry_locked() {
  if (kept_pkg_.empty()) return;
  for (size_t i = 0; i < telem_pkgs_.size(); ++i) {
    const TelemetryPkg& t = telem_pkgs_[i];
    const KeptPkg& k = kept_pkg_[i];
    for (size_t r = 0; r < t.count.size(); ++r) {
      std::copy_n(t.count[r].begin(), kTelemetryEvents, k.count + r * kTelemetryEvents);
      k.seen[r] = t.seen[r];
    }
  }
}

}  // namespace resctrlfs::hw::sim

// Implements the simulated machine's LWP side (see SimMachine in machine.h
// and LwpUnit in lwp_unit.h): the per-thread units, the control-interface
// calls that arm and drain them, and the derivation of LWP events from the
// workload model, so that a thread's records respond to its group's
// allocation (ours: an extension of the simulator).
//
// Events of a thread workload in a step of dt:
//   - instructions = instructions_per_sec x dt (times the entity's share of
//     an unpinned thread), branches = instructions x branch_share;
//   - DCache misses from the modelled traffic: the demand bandwidth moves
//     bandwidth / 64 lines per second to memory when the whole footprint
//     fits its share of the L3; the L1D misses 4 times as many lines (three
//     in four are served by the L3 then). When only `fit` of the footprint
//     stays in the L3 (its CLOSID's mask against the competing footprints,
//     as the occupancy model computes it), the DRAM-served share of those
//     misses is 1/4 + 3/4 x (1 - fit);
//   - latencies: an L3 hit 40 cycles, local DRAM 180, remote DRAM (the
//     share 1 - local_fraction) 300; DRAM latencies grow with queueing: by
//     1 + (1/throttle - 1) / 2, throttle being the share of the bandwidth
//     demand achieved after MBA/MB limits and the domain's peak (MB 10:
//     5.5 times), and by 1 + (q - 1) / 5, q being how many times the
//     misses the L3 no longer holds multiply the thread's DRAM misses (1
//     when it fits, up to 4: 1.6 times). Sources: L3 hits "local L3",
//     DRAM "DRAM".
// Every L1D miss is a DCache-miss event; to see the L3's effect, an LWPCB
// filters by latency (MinLatency 4 = 64 cycles leaves the DRAM misses) or by
// level (CLF with RAM).
#include <algorithm>
#include <cmath>

#include "hw/sim/machine.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::sim {

namespace {

constexpr double kLineBytes = 64;
constexpr double kL1MissesPerMemLine = 4;
constexpr double kL3HitCycles = 40;
constexpr double kLocalDramCycles = 180;
constexpr double kRemoteDramCycles = 300;
constexpr uint64_t kDataBase = 0x7f0000000000;
// LWP_CFG of the simulated OS: every event the unit has and the threshold
// interrupt enabled, interrupt vector 0xEF.
constexpr uint64_t kVector = 0xEF;
// The ring bytes all units may hold together (ours): four rings of the
// largest size a unit takes. Each arm allocates and touches its ring.
constexpr uint64_t kRingsLimitBytes = 64ULL << 20;

// A disarmed unit with nothing left to drain is freed.
bool spent(const LwpUnit& u) {
  const lwp::Lwpcb& cb = u.lwpcb();
  return !u.active() && (cb.buffer_size == 0 || cb.head == cb.tail);
}

}  // namespace

void SimMachine::lwp_step_locked(const Entity& e, double fit, double throttle, double dt_us) {
  auto it = lwp_.find(e.tid);
  auto wit = thread_work_.find(e.tid);
  if (it == lwp_.end() || wit == thread_work_.end()) return;
  const Workload& w = wit->second;
  LwpActivity a;
  a.instructions = std::max(0.0, w.instructions_per_sec) * e.weight * dt_us / 1e6;
  a.branches = a.instructions * std::clamp(w.branch_share, 0.0, 1.0);
  if (a.instructions > 0 && w.bandwidth_mbps > 0) {
    const double lines_per_instr = w.bandwidth_mbps * 1e6 / kLineBytes / w.instructions_per_sec;
    const double l1 = std::min(1.0, kL1MissesPerMemLine * lines_per_instr);
    const double dram_share = 1.0 / kL1MissesPerMemLine +
                              (1.0 - 1.0 / kL1MissesPerMemLine) * (1.0 - std::clamp(fit, 0.0, 1.0));
    const double q = dram_share * kL1MissesPerMemLine;
    const double slow =
        (1.0 + (1.0 / std::max(throttle, 0.02) - 1.0) / 2.0) * (1.0 + (q - 1.0) / 5.0);
    const double lf = std::clamp(w.local_fraction, 0.0, 1.0);
    a.misses = {
        {l1 * (1.0 - dram_share), kL3HitCycles, lwp::kSrcLocalCache},
        {l1 * dram_share * lf, kLocalDramCycles * slow, lwp::kSrcDram},
        {l1 * dram_share * (1.0 - lf), kRemoteDramCycles * slow, lwp::kSrcDram},
    };
  }
  a.data_base = kDataBase + (static_cast<uint64_t>(e.tid & 0xFFFF) << 32);
  a.data_bytes = w.cache_footprint_bytes;
  it->second.set_core_id(w.cpu >= 0 ? static_cast<uint8_t>(w.cpu) : 0);
  it->second.run(a);
}

LwpThreadStatus SimMachine::lwp_status_locked(int tid) {
  LwpThreadStatus st;
  auto it = lwp_.find(tid);
  if (it == lwp_.end()) return st;
  const LwpUnit& u = it->second;
  st.active = u.active();
  lwp::Lwpcb cb = u.slwpcb().value_or(u.lwpcb());
  if (auto enc = lwp::encode_lwpcb(cb); enc.ok()) st.lwpcb = *enc;
  st.buffer_size = cb.buffer_size;
  st.head = cb.head;
  st.tail = cb.tail;
  st.flags = cb.flags;
  st.missed = cb.missed;
  st.interrupts = u.interrupts();
  if (cb.buffer_size > 0)
    st.pending_records = ((cb.head + cb.buffer_size - cb.tail) % cb.buffer_size) / lwp::kRecordSize;
  return st;
}

Result<LwpThreadStatus> SimMachine::lwp_arm(int tid, const std::string& bytes) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  if (bytes.empty()) {
    auto it = lwp_.find(tid);
    if (it == lwp_.end()) return Error::make(ENOENT, "no LWP unit armed for this thread");
    RESCTRLFS_RETURN_IF_ERROR(it->second.llwpcb(std::nullopt));
    LwpThreadStatus st = lwp_status_locked(tid);
    if (spent(it->second)) lwp_.erase(it);
    return st;
  }
  const x86::LwpCaps caps = sim_lwp_caps();
  if (bytes.size() < lwp::kLwpcbHeaderSize || (bytes.size() - lwp::kLwpcbHeaderSize) % 8 != 0)
    return Error::make(EINVAL, "an LWPCB is 40 bytes plus 8 per event slot");
  const size_t n = (bytes.size() - lwp::kLwpcbHeaderSize) / 8;
  if (n > caps.max_events)
    return Error::make(EINVAL, "more than " + std::to_string(caps.max_events) + " event slots");
  RESCTRLFS_ASSIGN_OR_RETURN(
      lwp::Lwpcb cb,
      lwp::decode_lwpcb(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), n));
  uint64_t others = 0;
  for (const auto& [t, u] : lwp_)
    if (t != tid) others += u.buffer().size();
  if (others + cb.buffer_size > kRingsLimitBytes)
    return Error::make(
        ENOMEM, "the LWP rings would hold " + std::to_string(others + cb.buffer_size) +
                    " bytes, over the simulator's limit of " + std::to_string(kRingsLimitBytes) +
                    ": disarm and drain other threads' units or use a smaller "
                    "buffer");
  const uint64_t cfg = caps.supported.raw | (kVector << x86::LWP_CFG_VECTOR_SHIFT);
  auto [it, fresh] =
      lwp_.try_emplace(tid, caps, cfg, static_cast<uint64_t>(tid) * 0x9E3779B97F4A7C15ULL);
  if (auto r = it->second.llwpcb(cb); !r.ok()) {
    if (fresh) lwp_.erase(it);  // a refused LWPCB leaves nothing behind
    return r.error();
  }
  return lwp_status_locked(tid);
}

Result<std::string> SimMachine::lwp_drain(int tid, size_t max, LwpThreadStatus* after) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  auto it = lwp_.find(tid);
  if (it == lwp_.end()) return Error::make(ENOENT, "no LWP unit armed for this thread");
  Result<std::string> out = lwp::encode_records(it->second.drain(max));
  if (after != nullptr) *after = lwp_status_locked(tid);
  if (spent(it->second)) lwp_.erase(it);
  return out;
}

Result<LwpThreadStatus> SimMachine::lwp_status(int tid) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  if (lwp_.find(tid) == lwp_.end()) return Error::make(ENOENT, "no LWP unit armed for this thread");
  return lwp_status_locked(tid);
}

SimControl::LwpUsage SimMachine::lwp_usage() {
  std::lock_guard lock(mu_);
  LwpUsage u;
  u.units = lwp_.size();
  for (const auto& [t, unit] : lwp_) u.bytes += unit.buffer().size();
  u.limit_bytes = kRingsLimitBytes;
  return u;
}

std::vector<int> SimMachine::lwp_threads() {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (const auto& [t, unit] : lwp_) out.push_back(t);
  return out;
}

void SimMachine::lwp_forget(int tid) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  lwp_.erase(tid);
}

LwpUnit* SimMachine::lwp_unit_for_test(int tid) {
  std::lock_guard lock(mu_);
  auto it = lwp_.find(tid);
  return it == lwp_.end() ? nullptr : &it->second;
}

}  // namespace resctrlfs::hw::sim

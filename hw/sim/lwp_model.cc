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

using x86::LWP_CFG_COREID_SHIFT;
using x86::LWP_CFG_VECTOR_SHIFT;
using x86::MSR_AMD64_LWP_CBADDR;
using x86::MSR_AMD64_LWP_CFG;

namespace {

constexpr double kLineBytes = 64;
constexpr double kL1MissesPerMemLine = 4;
constexpr double kL3HitCycles = 40;
constexpr double kLocalDramCycles = 180;
constexpr double kRemoteDramCycles = 300;
constexpr uint64_t kDataBase = 0x7f0000000000;
// LWP_CFG of the simulated OS at boot: every event the CPU offers and the
// threshold interrupt enabled, interrupt vector 0xEF, COREID the CPU's
// number.
constexpr uint64_t kVector = 0xEF;
// Where a thread's LWPCB nominally lives (what LWP_CBADDR and SLWPCB
// return; the simulator keeps the LWPCB itself): a page per thread.
constexpr uint64_t kLwpcbBase = 0x7e0000000000;
uint64_t lwpcb_address(int tid) { return kLwpcbBase + (static_cast<uint64_t>(tid) << 12); }
// The instruction address of the LWPINS / LWPVAL the control interface
// executes for a thread.
constexpr uint64_t kInsertIp = 0x401000;
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
  // CoreId: LWP_CFG[39:32] of the CPU (shipped); the proposal's LWPMSR0
  // has no such field and leaves its source open: the CPU's number.
  const unsigned cpu = lwp_cpu_locked(e.tid);
  it->second.set_core_id(lwp_caps_.generation == lwp::Generation::kShipped
                             ? static_cast<uint8_t>(cpus_[cpu].lwp_cfg >> LWP_CFG_COREID_SHIFT)
                             : static_cast<uint8_t>(cpu));
  it->second.run(a);
}

LwpThreadStatus SimMachine::lwp_status_locked(int tid) {
  LwpThreadStatus st;
  auto it = lwp_.find(tid);
  if (it == lwp_.end()) return st;
  const LwpUnit& u = it->second;
  st.active = u.active();
  st.generation = std::string(lwp::generation_name(u.generation()));
  st.lwpcb_address = u.active() ? lwpcb_address(tid) : 0;
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
  if (!lwp_caps_.present)
    return Error::make(EOPNOTSUPP,
                       "this platform has no LWP (its CPUID 8000_0001h ECX[15] is clear): use an "
                       "AMD profile with \"lwp\" or with LWP's raw CPUID leaves");
  const x86::LwpCaps& caps = lwp_caps_;
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
  // LLWPCB on the CPU the thread runs on, under that CPU's LWP_CFG.
  const uint64_t cfg = cpus_[lwp_cpu_locked(tid)].lwp_cfg;
  auto [it, fresh] =
      lwp_.try_emplace(tid, caps, cfg, static_cast<uint64_t>(tid) * 0x9E3779B97F4A7C15ULL);
  it->second.set_cfg(cfg);
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

Result<LwpInsertResult> SimMachine::lwp_insert(int tid, const LwpInsert& op) {
  std::lock_guard lock(mu_);
  settle_locked(now_us_locked());
  auto it = lwp_.find(tid);
  if (it == lwp_.end()) return Error::make(ENOENT, "no LWP unit armed for this thread");
  LwpUnit& u = it->second;
  if (!u.has_instructions())
    return Error::make(EOPNOTSUPP,
                       "LWPINS and LWPVAL are the shipped LWP specification's: this platform's "
                       "LWP is the 2007 proposal's, which has neither (#UD)");
  LwpInsertResult out;
  const LwpThreadStatus before = lwp_status_locked(tid);
  for (uint64_t i = 0; i < op.count; ++i) {
    if (op.value) {
      u.lwpval(op.data2, op.data1, op.flags, kInsertIp);
    } else if (u.lwpins(op.data2, op.data1, op.flags, kInsertIp)) {
      ++out.full;
    }
  }
  out.status = lwp_status_locked(tid);
  out.written =
      (out.status.pending_records - before.pending_records) + (out.status.missed - before.missed);
  return out;
}

static_assert(kLwpRecordSize == lwp::kRecordSize);

Result<LwpThreadStatus> SimMachine::lwp_arm_events(int tid, const LwpArm& arm) {
  const std::optional<lwp::Generation> gen = lwp_generation();
  if (!gen)
    return Error::make(EOPNOTSUPP,
                       "this platform has no LWP (its CPUID 8000_0001h ECX[15] is clear): use "
                       "an AMD profile with \"lwp\" or with LWP's raw CPUID leaves");
  if (arm.value && lwp::event_id(*gen, lwp::Event::kValue) == 0)
    return Error::make(EINVAL,
                       "'value' is LWPVAL's event, which this platform's LWP (the 2007 "
                       "proposal's) does not have");
  lwp::Lwpcb cb;
  cb.buffer_size = arm.buffer_bytes;
  cb.buffer_base = 0x7f0000100000;
  cb.random = arm.random;
  cb.threshold = arm.threshold;
  cb.min_latency = arm.min_latency;
  cb.clf = arm.clf;
  cb.nbc = arm.nbc;
  cb.rdc = arm.rdc;
  cb.ram = arm.ram;
  cb.oth = arm.oth;
  auto slot = [&](const std::optional<uint32_t>& iv, lwp::Event e) {
    if (iv) cb.events.push_back(lwp::EventSlot{*iv, lwp::event_id(*gen, e), *iv});
  };
  slot(arm.value, lwp::Event::kValue);
  slot(arm.instructions, lwp::Event::kInstructions);
  slot(arm.branches, lwp::Event::kBranches);
  slot(arm.dcache, lwp::Event::kDcache);
  RESCTRLFS_ASSIGN_OR_RETURN(std::string bytes, lwp::encode_lwpcb(cb));
  return lwp_arm(tid, bytes);
}

std::optional<lwp::Generation> SimMachine::lwp_generation() const {
  if (!lwp_caps_.present) return std::nullopt;
  return lwp_caps_.generation;
}

uint64_t SimMachine::lwp_boot_cfg(unsigned cpu) const {
  const uint64_t mask = lwp_caps_.supported.mask();
  if (lwp_caps_.generation == lwp::Generation::kProposal) return mask;  // LWPMSR0: 32 bits
  return mask | (uint64_t{cpu & 0xFF} << LWP_CFG_COREID_SHIFT) | (kVector << LWP_CFG_VECTOR_SHIFT);
}

Result<void> SimMachine::lwp_write_cfg_locked(unsigned cpu, uint64_t v) {
  // Only what CPUID 8000_001Ch EDX offers may be enabled (the proposal:
  // #GP otherwise; compared by feature, the two layouts differing there).
  const uint32_t low = static_cast<uint32_t>(v);
  if ((low & ~lwp_caps_.supported.mask()) != 0)
    return gp(cpu, MSR_AMD64_LWP_CFG, "enables an LWP feature CPUID 8000_001Ch EDX does not offer");
  if (lwp_caps_.generation == lwp::Generation::kProposal && (v >> 32) != 0)
    return gp(cpu, MSR_AMD64_LWP_CFG, "LWPMSR0 has no bits above 31");
  cpus_[cpu].lwp_cfg = v;
  lwp_eax_[cpu].store(low);
  return Ok();
}

unsigned SimMachine::lwp_cpu_locked(int tid) const {
  auto w = thread_work_.find(tid);
  if (w != thread_work_.end() && w->second.cpu >= 0 &&
      static_cast<size_t>(w->second.cpu) < cpus_.size() && cpus_[w->second.cpu].online)
    return static_cast<unsigned>(w->second.cpu);
  for (unsigned c = 0; c < cpus_.size(); ++c)
    if (cpus_[c].online) return c;
  return 0;
}

uint64_t SimMachine::lwp_cbaddr_locked(unsigned cpu) const {
  // The LWPCB of the active unit of a thread running on `cpu` (the lowest
  // thread id when several share it); 0 when none is active.
  for (const auto& [tid, u] : lwp_)
    if (u.active() && lwp_cpu_locked(tid) == cpu) return lwpcb_address(tid);
  return 0;
}

Result<void> SimMachine::lwp_write_cbaddr_locked(unsigned cpu, uint64_t v) {
  // WRMSR behaves as LLWPCB: 0 disables the unit of the thread on `cpu`;
  // the address of a thread's own LWPCB reloads it (the pause/resume
  // idiom). The simulator has no thread memory to read another LWPCB from.
  for (auto& [tid, u] : lwp_) {
    if (lwp_cpu_locked(tid) != cpu) continue;
    if (v == 0 && u.active()) {
      settle_locked(now_us_locked());
      RESCTRLFS_RETURN_IF_ERROR(u.llwpcb(std::nullopt));
      return Ok();
    }
    if (v != 0 && v == lwpcb_address(tid)) {
      settle_locked(now_us_locked());
      u.set_cfg(cpus_[cpu].lwp_cfg);
      if (auto r = u.llwpcb(u.lwpcb()); !r.ok())
        return gp(cpu, MSR_AMD64_LWP_CBADDR, "the LWPCB at that address is refused");
      return Ok();
    }
  }
  if (v == 0) return Ok();
  return gp(cpu, MSR_AMD64_LWP_CBADDR,
            "no LWPCB at that address (the simulator holds only those armed through its "
            "control interface)");
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

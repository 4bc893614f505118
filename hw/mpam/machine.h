// Defines MpamMachine: a simulated Arm MPAM machine. It holds one MscModel
// per memory-system component the platform has (one in front of each L3,
// and of each L2 where the platform partitions it), answers their register
// pages through MscBus, keeps the CPUs' and threads' MPAM labels
// (MpamTagging), and produces the CSU monitors' values from a cache
// occupancy model driven by a clock (SimControl).
//
// The occupancy model (per cache that has CSU monitors), keyed by
// PARTID+PMG as MPAM's monitors are:
//   - entities are CPU workloads (labelled by the CPU's default label),
//     thread workloads and the task model's threads (labelled by the
//     thread's label; a thread with the default label PARTID 0/PMG 0 takes
//     its CPU's). A pinned entity fills its CPU's cache; an unpinned one is
//     spread evenly over the caches of the CPUs it may run on;
//   - a PARTID may fill popcount(CPBM)/CPBM_WD of the cache (its data
//     PARTID's CPBM in that cache's MSC); its entities share that capacity
//     in proportion to their footprints, and all targets together never
//     exceed the cache (scaled down alike);
//   - a (PARTID, PMG) below its target fills with time constant
//     fill_ms; one above it loses lines only while others fill (lines stay
//     until replaced, so a label nothing runs with keeps its occupancy
//     until other fills replace it: the kernel's limbo);
//   - MBW_MAX is stored and checked, not modelled (no bandwidth monitors
//     exist on these platforms to see it);
//   - CPU hotplug (set_cpu_online): a CPU going down loses its label and
//     its CPU workload; when the last CPU of an MSC goes down the MSC is
//     reset (every PARTID's CPBM and MBW_MAX to no limit, monitors off)
//     and its cache loses every line. A CPU comes up with PARTID 0/PMG 0.
// Time moves lazily as in the x86 simulator: each read steps the model to
// now, and every change first settles it, so the interval before a change
// counts under the old state. On the manual clock only advance_ms moves
// time.
//
// Thread-safe: one mutex guards the machine.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hw/backend.h"
#include "hw/mpam/device.h"
#include "hw/mpam/msc.h"

namespace resctrlfs::hw::mpam {

// A built-in MPAM platform (hw/mpam/platforms.cc).
struct MpamPlatform {
  std::string name;
  std::string description;
  // What /proc/cpuinfo shows on arm64 (MIDR_EL1 fields).
  unsigned implementer = 0x41, variant = 0, part = 0, revision = 0;
  std::string features;  // the "Features" line
  CpuTopology topology;
  MscParams l3_msc;  // one MSC per L3
  MscParams l2_msc;  // one per L2 when cpbm_wd or csu_monitors is set
  double fill_ms = 50;
};

class MpamMachine final : public MscBus, public MpamTagging, public SimControl {
 public:
  explicit MpamMachine(MpamPlatform p);

  const MpamPlatform& platform() const { return p_; }

  // MscBus
  const std::vector<MscInfo>& mscs() const override { return infos_; }
  Result<uint32_t> read32(size_t msc, uint32_t offset) override;
  Result<void> write32(size_t msc, uint32_t offset, uint32_t value) override;
  // MpamTagging
  Result<void> set_cpu_label(unsigned cpu, MpamLabel label) override;
  void set_thread_label(int tid, MpamLabel label) override;
  void forget_thread(int tid) override;
  // SimControl
  void set_manual_clock(bool manual) override;
  bool manual_clock() const override;
  void advance_ms(uint64_t ms) override;
  uint64_t now_ms() const override;
  Result<void> attach_thread_workload(int tid, const Workload& w) override;
  Result<void> attach_cpu_workload(unsigned cpu, const Workload& w) override;
  void set_task_activity(std::vector<std::pair<int, Workload>> activity) override;
  std::vector<int> task_model_threads() const override;
  void fail_next_writes(unsigned count, std::optional<unsigned> cpu) override;
  // Per MSC, the CPBM ("l2_cpor" / "l3_cpor") and MBW_MAX ("mbw_max") of
  // PARTID 0 and of every PARTID holding other than its reset value: an
  // MMIO register at its address in the MSC's page, the PARTID that
  // MPAMCFG_PART_SEL selects for it in `msr`, the MSC's first online CPU in
  // `cpu` (an MSC without one is powered down and not shown).
  std::vector<RegisterValue> dump_registers() const override;
  Result<void> set_cpu_online(unsigned cpu, bool online) override;
  bool cpu_online(unsigned cpu) const override;

  // For tests: the exact occupancy in bytes of (partid, pmg) in the cache of
  // MSC `msc` after stepping to now.
  double occupancy_bytes(size_t msc, uint16_t partid, uint8_t pmg);
  MpamLabel cpu_label(unsigned cpu) const;

 private:
  struct Cache {
    size_t msc = 0;
    uint64_t size = 0;
    std::map<uint32_t, double> occ;  // key partid << 8 | pmg
  };
  uint64_t now_us_locked() const;
  void settle_locked();
  void step_locked(Cache& c, double dt_us);
  uint64_t csu_bytes_locked(size_t cache, uint16_t partid, std::optional<uint8_t> pmg) const;

  MpamPlatform p_;
  std::vector<MscInfo> infos_;
  std::vector<std::unique_ptr<MscModel>> mscs_;
  std::vector<int> msc_cache_;  // MSC -> index into caches_, -1 without CSU
  std::vector<Cache> caches_;
  std::vector<int> cpu_cache_;  // CPU -> caches_ index of its monitored cache

  mutable std::mutex mu_;
  std::vector<MpamLabel> cpu_label_;
  std::vector<bool> online_;  // powered CPUs
  std::map<int, MpamLabel> thread_label_;
  std::map<int, Workload> thread_work_, task_work_;
  std::map<unsigned, Workload> cpu_work_;
  unsigned fail_writes_ = 0;
  bool manual_ = false;
  uint64_t manual_us_ = 0;
  uint64_t last_us_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace resctrlfs::hw::mpam

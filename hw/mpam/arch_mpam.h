// Defines MpamArch: the contract (hw/arch.h) over Arm MPAM, presenting MPAM
// through resctrl as Linux's drivers/resctrl/mpam_resctrl.c (v7.1) does.
// It is the only MPAM file that speaks the contract; everything it learns
// comes from the MSCs' ID registers (through MscBus) and the firmware's
// cache topology, as mpam_devices.c learns it.
//
// What it presents, after the Linux driver:
//   - MSCs are grouped into classes (a cache level, or memory); a class
//     keeps a feature only when all its MSCs have it with the same width;
//     a class must cover every CPU to back a resource;
//   - the system's PARTID and PMG ranges are the smallest any MSC has:
//     num_closid = PARTID_MAX + 1 for every resource (fs/ halves it under
//     CDP);
//   - L2 / L3: a cache class with cache-portion partitioning of at most 32
//     bits: cbm_len = CPBM_WD, sparse masks allowed, min_cbm_bits 1, the
//     full mask shareable (devices use PARTID 0, which may use every
//     portion), CDP capable;
//   - MB: the L3 class (or a memory class when the machine has one L3 and
//     one NUMA node) with MBW_MAX and BWA_WD > 0: a percentage, max 100,
//     bandwidth_gran = ceil(100 / 2^BWA_WD), min_bandwidth the percentage
//     of the lowest band (round(100 / 2^BWA_WD)), linear, no throttle mode;
//     a percentage is stored as the nearest band and read back as that
//     band's upper bound, rounded to the nearest percent; a value above
//     100 (the filesystem's round-up to bw_gran) is taken as 100;
//   - monitoring: llc_occupancy only, from the L3 class's CSU monitors;
//     occupancy in bytes (scale 1), max_threshold_occupancy limited by the
//     L3's size and defaulting to that size / num_rmids;
//   - RMIDs are PMGs and depend on the CLOSID (the contract's
//     rmid_depends_on_closid, Linux's CONFIG_RESCTRL_RMID_DEPENDS_ON_CLOSID):
//     a monitor is keyed by PARTID+PMG, so the RMID index is
//     CLOSID << fls(PMG_MAX) | PMG and num_rmids counts every index,
//     (PARTID_MAX + 1) << fls(PMG_MAX) (Linux's
//     resctrl_arch_system_num_rmid_idx); fs/ allocates a group's RMID among
//     its CLOSID's PMGs. When PMG_MAX + 1 is not a power of two, Linux's
//     index space has PMGs past PMG_MAX; those are refused here (EINVAL,
//     reads Error). The built-ins have PMG_MAX 1 and 3;
//   - CDP: refused with EOPNOTSUPP, as Linux refuses it unless built with
//     CONFIG_EXPERT (which distribution kernels are not);
//   - CPU hotplug as Linux's mpam_resctrl_offline_cpu/online_cpu do it: a
//     CPU leaves (joins) its domains; a domain whose last CPU leaves is
//     announced and removed; one that comes back is announced again. The
//     MSC, reset by its power-down, is programmed again with what every
//     PARTID held (mpam_devices.c's mpam_reprogram_msc keeps each
//     component's configuration), so a control domain comes back with its
//     schemata, not at the defaults as on x86; a monitor domain comes back
//     empty;
//   - no pseudo-locking, no MBM, no counter assignment, no io_alloc, no
//     event configuration.
//
// Not internally synchronised (the contract's rule).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/arch.h"
#include "hw/mpam/device.h"

namespace resctrlfs::hw::mpam {

// What the driver learnt from one class of MSCs.
struct ClassProps {
  MscLocus locus = MscLocus::CACHE;
  unsigned level = 0;
  std::vector<size_t> mscs;  // sorted by the MSCs' ids
  unsigned cpbm_wd = 0;      // 0: no usable cache-portion partitioning
  bool mbw_max = false;
  unsigned bwa_wd = 0;
  unsigned csu_monitors = 0;
  bool covers_all_cpus = false;
};

// The percentages Linux's mpam_resctrl.c converts MBW_MAX to and from.
uint32_t mbw_max_to_percent(uint32_t mbw_max, unsigned bwa_wd);
uint32_t percent_to_mbw_max(uint32_t percent, unsigned bwa_wd);

class MpamArch final : public Arch, public ThreadTagger {
 public:
  // Discovers the machine. ENODEV when MPAM offers resctrl nothing.
  static Result<std::unique_ptr<MpamArch>> create(MscBus& bus, MpamTagging& tagging,
                                                  const CpuTopology& topology);

  const PlatformInfo& info() const override { return info_; }
  Result<void> update_ctrls(const std::vector<CtrlUpdate>& updates) override;
  uint32_t get_ctrl(ResourceId rid, ConfType type, int domain_id, uint32_t closid) const override;
  uint32_t default_ctrl(ResourceId rid) const override;
  Result<void> set_cdp_enabled(ResourceId rid, bool enable) override;
  bool cdp_enabled(ResourceId rid) const override;
  Result<void> reset_all_ctrls() override;
  Result<void> set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) override;
  uint32_t rmid_idx_encode(uint32_t closid, uint32_t rmid) const override;
  std::pair<uint32_t, uint32_t> rmid_idx_decode(uint32_t idx) const override;
  ThreadTagger* thread_tagger() override { return this; }
  CounterValue read_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                            EventId ev, MonCtx* ctx,
                            std::optional<unsigned> cntr_id = std::nullopt) override;
  void reset_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                     EventId ev) override;
  void reset_all_counters(ResourceId rid, int domain_id) override;
  Result<void> set_event_config(ResourceId rid, int domain_id, EventId ev,
                                uint32_t config) override;
  uint32_t event_config(ResourceId rid, int domain_id, EventId ev) const override;
  Result<void> set_io_alloc_enabled(ResourceId rid, bool enable) override;
  bool io_alloc_enabled(ResourceId rid) const override;
  Result<void> set_cntr_assign_enabled(ResourceId rid, bool enable) override;
  Result<void> config_cntr(ResourceId rid, int domain_id, unsigned cntr_id, uint32_t closid,
                           uint32_t rmid, EventId ev, uint32_t evt_cfg, bool assign) override;
  Result<void> offline_cpu(unsigned cpu, ArchEvents* events) override;
  Result<void> online_cpu(unsigned cpu, ArchEvents* events) override;
  Result<void> pseudo_lock(ResourceId rid, int domain_id, uint32_t closid, uint32_t cbm) override;
  void pseudo_unlock(ResourceId rid, int domain_id) override;
  uint32_t pseudo_locked_cbm(ResourceId rid, int domain_id) const override;

  // ThreadTagger
  void set_thread_tags(int tid, uint32_t closid, uint32_t rmid) override;
  void thread_exited(int tid) override;

  // The discovered system-wide ranges and classes (for tests and status).
  unsigned partid_max() const { return partid_max_; }
  unsigned pmg_max() const { return pmg_max_; }
  const std::vector<ClassProps>& classes() const { return classes_; }

 private:
  MpamArch(MscBus& bus, MpamTagging& tagging) : bus_(bus), tagging_(tagging) {}
  Result<void> discover(const CpuTopology& topology);
  // The MSC backing control domain `domain_id` of `rid`, or -1.
  long ctrl_msc(ResourceId rid, int domain_id) const;
  Result<void> write_ctrl(size_t msc, ResourceId rid, uint32_t partid, uint32_t reg);
  uint32_t reset_reg(ResourceId rid) const;
  // Whether (closid, rmid) names a PARTID and a PMG every MSC takes.
  bool in_range(uint32_t closid, uint32_t rmid) const {
    return closid <= partid_max_ && rmid <= pmg_max_;
  }

  MscBus& bus_;
  MpamTagging& tagging_;
  PlatformInfo info_;
  std::vector<ClassProps> classes_;
  unsigned partid_max_ = 0, pmg_max_ = 0;
  unsigned pmg_shift_ = 0;  // fls(PMG_MAX): the RMID index's PMG bits
  int l3_class_ = -1, l2_class_ = -1, mb_class_ = -1, mon_class_ = -1;
  unsigned mb_bwa_wd_ = 0;
  // Every domain as discovered, with all its CPUs: where a CPU coming
  // online belongs.
  std::vector<std::vector<CtrlDomain>> all_ctrl_domains_;
  std::vector<MonDomain> all_mon_domains_;
  // Shadow of the control registers: [(rid, msc)] -> per PARTID value.
  std::map<std::pair<int, size_t>, std::vector<uint32_t>> shadow_;
};

}  // namespace resctrlfs::hw::mpam

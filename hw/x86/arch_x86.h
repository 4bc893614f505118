// Defines X86Arch: the hw::Arch implementation for Intel RDT and AMD PQoS,
// programming model-specific registers through an MsrDevice (a real one
// reached through the broker, or the simulated machine).
//
// It keeps a shadow copy of every control register (per resource, control
// domain and hardware CLOSID index) so that get_ctrl() never touches the
// hardware and update_ctrls() writes only what changed, each register once
// on the first CPU of its domain, rolling back on failure. MBM counters are
// folded across the counter width into a 64-bit running total per
// (monitoring domain, RMID or ABMC counter, event).
#pragma once

#include <cerrno>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "hw/arch.h"
#include "hw/x86/aet.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/device.h"
#include "hw/x86/irdt.h"

namespace resctrlfs::hw::x86 {

class X86Arch final : public Arch {
 public:
  // Builds the Arch and brings the machine to the state Linux leaves it in
  // at boot: every control register at its default (written
  // unconditionally), CDP off, every online CPU's PQR_ASSOC at CLOSID 0 /
  // RMID 0. `sched` is the simulator's scheduler, handed out as
  // thread_tagger() (null on real hardware).
  // `pmt` (optional) holds the telemetry aggregators: with it, the PERF_PKG
  // resource is enumerated into info().res(ResourceId::PERF_PKG).mon, under the rdt= options
  // `rdt` (see AetTelemetry).
  static Result<std::unique_ptr<X86Arch>> create(X86Platform info, HwLimits limits,
                                                 std::shared_ptr<MsrDevice> msr,
                                                 std::shared_ptr<ThreadTagger> sched,
                                                 std::shared_ptr<PmtTelemetryDevice> pmt = nullptr,
                                                 const RdtOptions& rdt = {});

  const PlatformInfo& info() const override { return info_; }
  // The platform with the CPU's x86 identity.
  const X86Platform& platform() const { return info_; }
  Result<void> update_ctrls(const std::vector<CtrlUpdate>& updates) override;
  uint32_t get_ctrl(ResourceId rid, ConfType type, int domain_id, uint32_t closid) const override;
  uint32_t default_ctrl(ResourceId rid) const override;
  Result<void> set_cdp_enabled(ResourceId rid, bool enable) override;
  bool cdp_enabled(ResourceId rid) const override;
  Result<void> reset_all_ctrls() override;
  Result<void> set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) override;
  ThreadTagger* thread_tagger() override { return sched_.get(); }
  void set_cpus_assoc(std::vector<CpuAssoc>& assocs) override;
  // The contract's monitoring calls; the x86 monitor resources are L3 (the
  // RMID counters: CLOSID plays no part) and PERF_PKG (telemetry).
  CounterValue read_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                            EventId ev, MonCtx* ctx,
                            std::optional<unsigned> cntr_id = std::nullopt) override;
  void reset_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                     EventId ev) override;
  void reset_all_counters(ResourceId rid, int domain_id) override;
  Result<void> set_event_config(ResourceId rid, int domain_id, EventId ev,
                                uint32_t config) override;
  uint32_t event_config(ResourceId rid, int domain_id, EventId ev) const override;
  Result<void> set_cntr_assign_enabled(ResourceId rid, bool enable) override;
  Result<void> config_cntr(ResourceId rid, int domain_id, unsigned cntr_id, uint32_t closid,
                           uint32_t rmid, EventId ev, uint32_t evt_cfg, bool assign) override;
  Result<void> set_io_alloc_enabled(ResourceId rid, bool enable) override;
  bool io_alloc_enabled(ResourceId rid) const override;
  // The MBM running totals (prev, chunks) of every RMID and ABMC counter of
  // the monitoring domains there are now, kept outside the process (see
  // Arch::keep_counter_state).
  size_t counter_state_bytes() const override;
  void keep_counter_state(std::byte* region, bool carry_over) override;
  bool counters_carried_over() const override { return carried_over_; }

  // The same for the x86 resources by name (what the contract's calls
  // above dispatch to; tests and the broker's checks call them directly).
  // L3 RMID counters (QM_EVTSEL/QM_CTR, or ABMC's counters):
  CounterValue read_event(int domain_id, uint32_t rmid, EventId ev,
                          std::optional<unsigned> cntr_id = std::nullopt);
  // Telemetry (PERF_PKG) of `rmid` on package `package_id`.
  CounterValue read_perf_pkg_event(int package_id, uint32_t rmid, EventId ev);
  void reset_event(int domain_id, uint32_t rmid, EventId ev);
  void reset_domain_events(int domain_id);
  // BMEC (L3 MBM event configuration).
  using Arch::event_config;
  using Arch::set_event_config;
  Result<void> set_event_config(int domain_id, EventId ev, uint32_t config);
  uint32_t event_config(int domain_id, EventId ev) const;
  // ABMC.
  Result<void> set_abmc_enabled(bool enable);
  using Arch::config_cntr;
  Result<void> config_cntr(int domain_id, unsigned cntr_id, uint32_t rmid, EventId ev,
                           uint32_t evt_cfg, bool assign);
  Result<void> offline_cpu(unsigned cpu, ArchEvents* events) override;
  Result<void> online_cpu(unsigned cpu, ArchEvents* events) override;

  Result<void> pseudo_lock(ResourceId rid, int domain_id, uint32_t closid, uint32_t cbm) override;
  void pseudo_unlock(ResourceId rid, int domain_id) override;
  uint32_t pseudo_locked_cbm(ResourceId rid, int domain_id) const override;

  // Device channels (I/O RDT): the machine's IRDT table and the device its
  // tagging registers are written through. Writes nothing (the channels'
  // tags are unknown until set). ENODEV when CPUID enumerates no I/O RDT.
  Result<void> attach_io_rdt(IrdtTable table, std::shared_ptr<MmioDevice> mmio);
  IoTagCaps io_tag_caps() const override;
  std::vector<IoChannelInfo> io_channels() const override;
  Result<void> set_io_channel_tags(uint32_t id, uint32_t closid, uint32_t rmid) override;
  Result<std::pair<uint32_t, uint32_t>> io_channel_tags(uint32_t id) const override;
  Result<void> set_io_tagging(bool alloc, bool mon) override;
  IoTagCaps io_tagging() const override { return io_tagging_; }

  // The register and value a control value becomes (exposed for tests and
  // for the broker's policy).
  uint32_t ctrl_msr(ResourceId rid, uint32_t hw_index) const;
  // For one control value; CBA's fields are a byte each (the throttle
  // level), placed by ctrl_reg_of().
  uint64_t ctrl_reg_value(ResourceId rid, uint32_t value) const;
  // The register holding hardware indices [first, first + ctrl_reg_span):
  // one index per register, but CBA packs 8 CLOSIDs into each.
  static uint32_t ctrl_reg_span(ResourceId rid);
  // The whole register whose first index is `first`, from `vals` (one
  // schema-level value per hardware index).
  uint64_t ctrl_reg_of(ResourceId rid, const std::vector<uint32_t>& vals, uint32_t first) const;
  // The CPUs a control register of domain `d` is written on: one for a
  // register the domain shares, every CPU for CBA's logical-processor ones.
  std::vector<unsigned> ctrl_cpus(ResourceId rid, const CtrlDomain& d) const;
  bool abmc_enabled() const { return abmc_enabled_; }
  // The RMID QM_EVTSEL selects for logical `rmid` on monitoring domain
  // `domain_id` (differs from `rmid` only under SNC).
  uint32_t physical_rmid(int domain_id, uint32_t rmid) const;
  // How many times every register was written again from the shadows
  // (after the MsrDevice reconnected, or a rollback could not complete).
  uint64_t resyncs() const { return resyncs_; }

 private:
  X86Arch(X86Platform info, HwLimits limits, std::shared_ptr<MsrDevice> msr,
          std::shared_ptr<ThreadTagger> sched);
  Result<void> init();
  int ctrl_domain_index(ResourceId rid, int domain_id) const;
  int mon_domain_index(int domain_id) const;
  uint32_t hw_index(ResourceId rid, ConfType type, uint32_t closid) const;
  // Writes `value` to `msr` on each CPU in order; on failure restores the
  // CPUs already written to `old_value` and returns EIO.
  // SNC: clears RMID_SNC_CONFIG's localized-distribution bit on `cpu`'s L3
  // if set (read, then write only when needed), selecting sharing mode.
  Result<void> enable_rmid_sharing(unsigned cpu);
  Result<void> write_on(const std::vector<unsigned>& cpus, uint32_t msr, uint64_t value,
                        uint64_t old_value);
  // The domain id `cpu` belongs to for a resource's controls, and for
  // monitoring; -1 when it has none (no such cache).
  int ctrl_domain_id_of(ResourceId rid, unsigned cpu) const;
  int mon_domain_id_of(unsigned cpu) const;

  // Linux's arch_mbm_state: a fresh state counts from a raw value of 0.
  struct MbmState {
    uint64_t prev = 0;    // last raw counter value (the baseline after a reset)
    uint64_t chunks = 0;  // running total in counter units
  };
  struct MonDomState {
    std::vector<MbmState> rmid[2];  // [0] mbm_total, [1] mbm_local
    std::vector<MbmState> cntr;     // ABMC counters
    // The last L3_QOS_ABMC_CFG value written for each counter (empty: never
    // configured since ABMC was turned on), written again by resync().
    std::vector<std::optional<uint64_t>> cntr_cfg;
    uint32_t evt_cfg[2] = {0, 0};
  };
  MonDomState fresh_mon_state() const;

  // I/O RDT.
  const IoChannel* io_channel(uint32_t id) const;
  // One online CPU of every L3 domain (IA32_L3_IO_QOS_CFG's writes).
  std::vector<unsigned> io_cfg_cpus() const;
  // Writes every channel's tags again from io_tags_ (resync()).
  Result<void> rewrite_io_tags();
  std::optional<IrdtTable> irdt_;
  std::shared_ptr<MmioDevice> mmio_;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> io_tags_;  // channel -> (closid, rmid)
  IoTagCaps io_tagging_;

  X86Platform info_;
  HwLimits limits_;
  std::shared_ptr<MsrDevice> msr_;
  std::shared_ptr<ThreadTagger> sched_;
  MbmCorrection correction_;
  // shadow_[rid][domain index][hw index]: the schema-level value.
  std::vector<std::vector<uint32_t>> shadow_[kNumResources];
  bool cdp_[kNumResources] = {};
  std::vector<std::optional<uint64_t>> pqr_cache_;  // per CPU
  // Per CPU: the tags it should run with (the last set_cpu_assoc), written
  // or not.
  std::vector<std::optional<uint64_t>> pqr_want_;
  // When the MsrDevice's reconnects() moved past this, or stale_ is set,
  // the registers may not hold the shadows: resync() writes them all again.
  uint64_t synced_reconnects_ = 0;
  bool stale_ = false;
  uint64_t resyncs_ = 0;
  // Writes every shadowed register again when needed (see above); EIO when
  // that fails, and it is tried again by the next call.
  Result<void> resync();
  std::vector<MonDomState> mon_;
  // Where keep_counter_state() keeps each monitoring domain's MbmStates, by
  // domain id: rmid[0], rmid[1] (num_rmids each), then the ABMC counters
  // (empty: nowhere). Each change of a state is copied there at once
  // (keep_mbm), before the read that made it returns.
  std::map<int, MbmState*> kept_mon_;
  bool carried_over_ = false;
  bool cntr_configured(unsigned cpu, unsigned cntr_id, uint64_t want);
  // Copies mon_[d]'s state `i` of `kind` (0, 1: the RMID's event, 2: ABMC
  // counter) to where it is kept; keep_mon_domain: all of mon_[d]'s.
  void keep_mbm(size_t d, int kind, size_t i);
  void keep_mon_domain(size_t d);
  // MBM baselines of one RMID read ahead in one batch (see reset_event):
  // the fs resets a new RMID's counters domain by domain, event by event,
  // and each reset would otherwise cost its own select + read round trip.
  // Valid only for the reset_event calls that follow at once, in that
  // order; any other call that can touch the hardware drops them.
  struct Baseline {
    int dom = 0;  // mon domain index
    EventId ev = EventId::MBM_TOTAL;
    int err = ECANCELED;  // 0: `raw` holds the counter; ECANCELED: not read
    uint64_t raw = 0;
  };
  uint32_t baselines_rmid_ = 0;
  std::vector<Baseline> baselines_;  // in the order the resets will come
  size_t baselines_next_ = 0;
  void drop_baselines() {
    baselines_.clear();
    baselines_next_ = 0;
  }
  // Reads the baselines of every MBM event of `rmid` on every monitoring
  // domain in one batch.
  void read_baselines(uint32_t rmid);
  bool abmc_enabled_ = false;
  std::unique_ptr<AetTelemetry> aet_;  // null without telemetry aggregators
  bool io_alloc_enabled_ = false;      // SDCIAE (L3)
  // L3_QOS_EXT_CFG as it should read with the given ABMC and SDCIAE states.
  static uint64_t ext_cfg(bool abmc, bool sdciae);
  uint64_t prefetch_disable_bits_ = 0;  // 0: pseudo-locking not offered
  // Pseudo-locked regions: (resource, control domain id) -> mask.
  std::map<std::pair<ResourceId, int>, uint32_t> locked_;
};

}  // namespace resctrlfs::hw::x86

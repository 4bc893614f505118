// Defines SimMachine: a register-level model of an Intel RDT / AMD PQoS
// processor built from a platform Profile. It is a CpuidSource and an
// MsrDevice (so the x86 Arch programs it exactly as it programs hardware),
// a ThreadTagger (threads' CLOSID/RMID tags) and a SimControl (clock,
// workloads, fault injection).
//
// What it enforces, as the hardware would (the access fails with EIO, the
// #GP of the real instruction):
//   - an MSR that the enumerated features do not provide;
//   - writing a read-only register (IA32_QM_CTR, L3_QOS_ABMC_DSC);
//   - a mask/bandwidth register index at or beyond the enumerated CLOSIDs;
//   - PQR_ASSOC with a CLOSID or RMID beyond the enumerated maximum;
//   - QM_EVTSEL with reserved bits, or on AMD an RMID beyond CPUID.0xF.0:EBX
//     (AMD64 PQoS; Intel takes it and QM_CTR then reads Error, RDT
//     architecture specification 7.1.1);
//   - MBA_CFG on a part without it (only the second-generation MBA and the
//     Resource-Aware MBA models of registers.h have it), and its bit 0 on a
//     part with per-thread MBA;
//   - a CBA throttle byte (IA32_QoS_Core_BW_Thrtl_n, per logical processor)
//     above the maximum level CPUID.0x10.5:EAX[7:0], or non-zero for a
//     CLOSID beyond the enumerated count (ours: the specification names only
//     the first);
//   - reserved bits (mask bits above cbm_len, BMEC bits above 6, an
//     L3_QOS_EXT_CFG enable bit whose feature (ABMC, SDCIAE) is absent, ...);
//   - an empty or non-contiguous cache mask on Intel without the
//     non-contiguous CPUID bit.
//
// The workload model (per L3 domain, advanced lazily by a clock):
//   - time: a read (QM_CTR, occupancy) steps the model only when at least
//     1 ms has passed since its last step; anything that changes what the
//     model counts (a register or MMIO write, a thread's tags or workload, a
//     CPU going on- or offline, LWP arming, draining and status, the switch
//     to the manual clock) first steps it exactly to the current instant, so
//     the time before the change is counted under the state it had. On the
//     manual clock every step is then a whole number of advanced
//     milliseconds and nothing depends on real time;
//   - entities are CPU workloads (tagged by the CPU's PQR_ASSOC), thread
//     workloads (tagged by set_thread_tags; pinned to a CPU, or spread over
//     every L3 domain) and the task model's threads (set_task_activity:
//     tagged like thread workloads, a tag of 0 taking the CPU's PQR_ASSOC);
//   - occupancy: each CLOSID may fill popcount(mask)/cbm_len of the L3
//     (its DATA mask under CDP); entities of a CLOSID share that capacity in
//     proportion to their footprints, and all of them together never exceed
//     the cache: each entity's target, spread over its mask's ways. Lines
//     are held per (RMID, way) and move only by fills: an RMID below its
//     target fills with time constant occupancy_fill_ms, into free lines
//     first, then replacing lines of RMIDs above their target in the same
//     way (an idle RMID's target is 0). Nothing leaves a cache no one fills
//     (AMD64 PQoS: lines stay until normal replacement removes them), so a
//     freed RMID stays "dirty" (limbo) until other fills replace its lines;
//   - the task model's streaming demand (Workload::stream_mbps) is scaled
//     by the share of the entity's footprint its target leaves out and
//     added to its bandwidth demand;
//   - bandwidth: Intel MBA delay d scales an entity's demand by (100-d)/100.
//     With per-thread MBA (CPUID.0x10.3:ECX[0] set, MBA 3.0) d is the delay
//     of the entity's own CLOSID. Without it (MBA 1.0/2.0) the core applies
//     one delay to all its SMT siblings: the max of the delays of the
//     CLOSIDs running on its threads, or the min when MBA_CFG bit 0 is set
//     on a part that has it. A thread "runs" the CLOSIDs of the thread
//     workloads pinned to it, and its PQR_ASSOC CLOSID when it has a CPU
//     workload or no pinned thread (an idle thread still holds its CLOS);
//     an unpinned thread workload is on no one core and takes its own
//     CLOSID's delay;
//     CBA (CPUID.0x10.0:EBX[5]): level L (0..max) of the entity's CLOSID in
//     its CPU's registers (an unpinned thread: the domain's first online
//     CPU's) leaves (max + 1 - L) / (max + 1) of its demand, and the entity
//     gets the stricter of that and MBA's (100 - d) / 100;
//     an AMD L3QOS_BW_CONTROL limit caps the CLOSID's reads at
//     value/8 GB/s unless the U bit is set; the domain never exceeds
//     mem_bandwidth_mbps: on Intel every entity is scaled alike; on AMD the
//     peak is shared by demand, each entity held to its COS's limit, and
//     what a limited one leaves goes to the others (no sharing in
//     proportion to the limits, AMD64 PQoS). Traffic is
//     bandwidth_mbps of reads plus writes, write_fraction of it writes and
//     local_fraction of each local. Intel's MBA delay scales reads and
//     writes alike (it delays the core's requests to memory whatever their
//     kind). An AMD L3QOS_BW_CONTROL limit holds the COS's reads only (the
//     AMD64 PQoS specification: a limit on "the cacheable read bandwidth");
//     its writes pass unlimited but count against mem_bandwidth_mbps with
//     the reads, so heavy write traffic can keep a COS below its limit (the
//     specification's fifth case of a limit not reached). Intel's mbm_total
//     counts reads and writes, mbm_local the local part of both. Under BMEC
//     an event counts the classes its QOS_EVT_CFG bits select: reads to
//     local / remote memory (bits 0, 1) and writes, which the model takes
//     as non-temporal writes to local / remote memory (bits 2, 3). Our
//     choice: the model keeps no dirty lines, so a workload's writes reach
//     memory as it issues them, the class bits 2/3 describe; bit 6 (dirty
//     victims) and the slow-memory read bits 4/5 match no modelled traffic.
//     SMBA limits are stored and checked but do not throttle (no slow
//     memory is modelled);
//   - counters are bytes / upscaling factor, modulo 2^counter_width. QM_CTR
//     reads Error for an unknown event or an RMID beyond CPUID.0xF.0:EBX,
//     and for an RMID within it but beyond the L3's own count (CPUID.0xF.1:
//     ECX) Unavailable on Intel (the RDT specification's "resource A / B"
//     example), Error on AMD (AMD64 PQoS). With CPUID.0xF.1:EAX[8] an MBM
//     read has the Overflow bit when that counter wrapped since its last
//     read;
//   - STLB QoS (profile "stlb"): IA32_CORE_CAPABILITIES (read-only; bit 0),
//     STLB_QOS_INFO (read-only) and STLB_QOS_MASK_0..NCLOS per physical
//     core, shared by its SMT threads; a mask must be a non-empty contiguous
//     run within the enumerated length (else #GP), an index beyond NCLOS
//     #GPs; STLB_FILL_TRANSLATION (with "fill") is write-only, #GPs on its
//     reserved bits 9:4 and on a CLOS beyond NCLOS (our choice: the
//     specification names no rule for it). No TLB is modelled: the masks
//     are stored and checked, they change no workload's numbers;
//   - register scope: Intel keeps L3_QOS_CFG (CDP) per L3 domain and
//     QM_EVTSEL per CPU; AMD keeps L3_QOS_CFG per CPU (PQoS state is per
//     logical processor) and QM_EVTSEL per L3 domain (shared by the QoS
//     domain's processors). Under AMD CDP a CPU workload uses its CPU's CDP
//     bit, a thread workload its CPU's (unpinned: the domain's first online
//     CPU's);
//   - AMD-style hardware counters (mbm_hw_counters > 0): each L3 domain
//     counts MBM for at most that many RMIDs (never fewer than its CPUs: the
//     AMD64 PQoS minimum). An RMID that gets a counter starts from 0 (the
//     hardware clears the count of an RMID it begins tracking). An RMID gets a counter when it
//     becomes active (a CPU of the domain has it in PQR_ASSOC, or a tagged
//     thread or workload uses it) and a free or idle counter exists; the
//     least recently active idle RMID loses its counter. An RMID without a
//     counter reads Unavailable and its traffic is not counted meanwhile;
//   - a BMEC configuration change clears every MBM count in the domain (both
//     events, every RMID) and the next read of each reports Unavailable;
//     switching ABMC on or off clears the RMID-based counts;
//   - ABMC counters count (RMID, BwType) from the moment they are configured.
//   - Sub-NUMA Clustering (the CPUs of one L3 belong to several NUMA nodes):
//     each node owns an equal share of the L3 (l3 size / nodes) and of the
//     physical RMIDs (CPUID count / nodes); a CPU's traffic and cache lines
//     belong to its own node (an unpinned thread is spread over every node
//     of every L3). Counter units are the CPUID upscaling factor / nodes.
//     MSR_RMID_SNC_CONFIG (per L3, on the models Linux lists, present when
//     SNC is enabled) selects where
//     tagged activity is counted: bit 0 set (power-on) counts RMID r only on
//     the node owning physical RMID r (other nodes' activity is lost);
//     bit 0 clear (sharing mode) counts logical RMID r of node k in physical
//     RMID k x (RMIDs per node) + r. Occupancy/MBM arrays are indexed by
//     physical RMID.
//
// Telemetry (Intel AET, profile "telemetry"): the machine is also a
// PmtTelemetryDevice whose aggregators hold per-package, per-RMID
// cumulative counts in the layout of their GUID (hw/x86/aet.h), advanced
// with the same clock (telemetry.cc):
//   - a CPU workload keeps its CPU busy under the CPU's PQR_ASSOC RMID; a
//     thread workload keeps one CPU busy under the thread's RMID, on its
//     CPU's package or spread evenly over the packages; a CPU with neither
//     idles under its PQR_ASSOC RMID;
//   - busy time counts unhalted core cycles (2.4 GHz) and reference cycles
//     (2.0 GHz); a share of the core cycles stalls on LLC misses (growing
//     with memory bandwidth, up to 60%) and on LLC hits (5% plus up to 10%
//     with the footprint's share of the L3); the other cycles retire 2.5
//     uops each (instructions: uops / 1.25); pcnt counts reference cycles
//     / 1024;
//   - a busy core draws 2.5 W plus 1.5 W per 10 GB/s of memory bandwidth
//     demand,
//     an idle one 0.2 W; activity is energy / V^2 at V = 0.85;
//   - idle time counts reference cycles of C1 residency (20%) and C6
//     residency (80%);
//   - a counter reads valid once its RMID has had any busy or idle time on
//     the package; RMIDs beyond an aggregator's num_rmids never do;
//     several aggregators of one GUID on a package split the counts evenly.
//
// I/O RDT (profile "io_rdt", io_rdt.cc; ours): the machine has the IRDT
// table its profile describes (irdt_blob()) and is an MmioDevice holding the
// tagging registers IO_PQR_CLOSn / IO_PQR_RMIDn of every link (power-on 0).
// As the specification says, an access inside a register page that is not
// one whole register (reserved offsets, a wrong width), or a value beyond
// the CLOSIDs / RMIDs the CPU enumerates, is ignored (a read there gives
// 0); an address outside every register page fails (EIO). A device
// workload on a channel (attach_channel_workload) fills the L3 of its I/O
// block's package and uses its memory bandwidth, like a CPU workload:
//   - with IRAE set in that L3's IA32_L3_IO_QOS_CFG (0xC83) and CLOS
//     tagging on the link, under the channel's CLOS (its cache mask confines
//     the fill); otherwise under CLOS 0;
//   - with IRME set and RMID tagging on the link, counted in the channel's
//     RMID (occupancy and both MBM events); otherwise counted nowhere;
//   - on the L3's first SNC node (the seed's advice on SNC is the OS's: tag
//     with an RMID of the node the DMA targets).
//
// Thread-safe: one mutex guards the machine. A counter read is O(1) unless
// simulated time moved by a millisecond or more since the domain was last
// advanced (then O(entities + RMIDs) once).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "hw/arch.h"
#include "hw/backend.h"
#include "hw/sim/lwp_unit.h"
#include "hw/sim/profile.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/device.h"
#include "hw/x86/lwp_cpuid.h"

namespace resctrlfs::hw::sim {

class SimMachine final : public CpuidSource,
                         public MsrDevice,
                         public ThreadTagger,
                         public SimControl,
                         public PmtTelemetryDevice,
                         public MmioDevice {
 public:
  explicit SimMachine(Profile profile);

  const Profile& profile() const { return profile_; }
  // The platform as this machine's own CPUID enumerates it (every feature,
  // whatever a kernel would turn off): what its registers implement.
  const x86::X86Platform& info() const { return info_; }
  // The platform a kernel booted with the profile's rdt= options shows
  // (Linux's model quirks applied): what the resctrl tree exposes.
  const x86::X86Platform& os_info() const { return os_info_; }
  const x86::HwLimits& limits() const { return limits_; }

  // CpuidSource
  CpuidRegs cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const override;
  // MsrDevice
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override;
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) override;
  // ThreadTagger
  void set_thread_tags(int tid, uint32_t closid, uint32_t rmid) override;
  void thread_exited(int tid) override;
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
  std::vector<RegisterValue> dump_registers() const override;
  std::vector<RegisterValue> dump_all_registers() const override;
  Result<void> set_cpu_online(unsigned cpu, bool online) override;
  bool cpu_online(unsigned cpu) const override;
  // LWP (lwp_model.cc).
  Result<LwpThreadStatus> lwp_arm(int tid, const std::string& lwpcb) override;
  Result<std::string> lwp_drain(int tid, size_t max, LwpThreadStatus* after = nullptr) override;
  Result<LwpThreadStatus> lwp_status(int tid) override;
  Result<LwpInsertResult> lwp_insert(int tid, const LwpInsert& op) override;
  Result<LwpThreadStatus> lwp_arm_events(int tid, const LwpArm& arm) override;
  // The LWP generation the machine's CPUID enumerates, or nullopt when it
  // has no LWP (CPUID 8000_0001h ECX[15] clear, or not an AMD part).
  std::optional<lwp::Generation> lwp_generation() const;
  LwpUsage lwp_usage() override;
  std::vector<int> lwp_threads() override;
  void lwp_forget(int tid) override;
  // For tests: the thread's LWP unit (nullptr if never armed); mu_ is not
  // held by the caller's use of it, so only single-threaded tests use it.
  LwpUnit* lwp_unit_for_test(int tid);
  // PmtTelemetryDevice (telemetry.cc)
  std::vector<PmtRegion> pmt_regions() const override;
  Result<uint64_t> pmt_read64(size_t region, uint64_t offset) override;

  // I/O RDT (io_rdt.cc): the firmware's IRDT table (empty without one),
  // the tagging registers, device workloads.
  const std::vector<uint8_t>& irdt_blob() const { return irdt_blob_; }
  Result<uint64_t> mmio_read(uint64_t addr, unsigned width) override;
  Result<void> mmio_write(uint64_t addr, unsigned width, uint64_t value) override;
  Result<void> attach_channel_workload(uint32_t channel, const Workload& w) override;

  // The counters that outlive the daemon (kept_counters.cc; see
  // SimControl::keep_counter_state).
  size_t counter_state_bytes() const override;
  void keep_counter_state(std::byte* region, bool carry_over) override;

  // For tests of the model: the exact (unquantised) occupancy in bytes of
  // physical RMID `rmid` on L3 domain `domain_id` after advancing to now.
  double occupancy_bytes(int domain_id, uint32_t rmid);

 private:
  struct AbmcCounter {
    bool enabled = false;
    bool is_clos = false;  // BwSrc names a CLOSID rather than an RMID
    uint32_t rmid = 0;
    uint32_t bw_type = 0;
    double bytes = 0;
  };
  struct L3Dom {
    int id = 0;
    std::vector<unsigned> cpus;
    std::vector<uint64_t> l3_mask;
    uint64_t l3_qos_cfg = 0;
    std::vector<uint64_t> mba_thrtl;
    std::vector<uint64_t> amd_bw;
    std::vector<uint64_t> smba_bw;
    uint64_t evt_cfg[2] = {0, 0};
    uint64_t ext_cfg = 0;     // L3_QOS_EXT_CFG (ABMC, SDCIAE; SDCIAE stored, not modelled)
    uint64_t io_rdt_cfg = 0;  // IA32_L3_IO_RDT_CFG (IRAE/IRME, io_rdt.cc)
    uint64_t abmc_cfg_last = 0;
    uint64_t rmid_snc_cfg = 0;  // MSR_RMID_SNC_CONFIG (power-on value set at construction)
    uint64_t rambae = 0;        // MBA_CFG bit 2, die scope (stored; see mba_cfg_bits_)
    uint64_t qm_evtsel = 0;     // AMD: QM_EVTSEL is shared by the domain's CPUs
    unsigned snc_ways = 1;      // NUMA nodes sharing this L3
    double unit = 1;            // bytes per counter unit
    std::vector<AbmcCounter> cntrs;
    // Model state, indexed by RMID.
    std::vector<double> occ;      // bytes, the sum of occ_way's row
    unsigned ways = 1;            // L3 ways (the CBM length; 1 without L3 CAT)
    std::vector<double> occ_way;  // bytes per [RMID * ways + way]
    std::vector<double> mbm[2];   // 0: total event, 1: local event
    std::vector<uint8_t> unavail_once[2];
    std::vector<uint64_t> wraps_read[2];  // counter wraps seen by the last read (Overflow bit)
    std::vector<uint8_t> tracked;
    std::vector<uint64_t> last_active_us;
    unsigned n_tracked = 0;
    uint64_t last_us = 0;
  };
  struct L2Dom {
    int id = 0;
    std::vector<unsigned> cpus;
    std::vector<uint64_t> l2_mask;
    uint64_t l2_qos_cfg = 0;
  };
  // A physical core: its SMT siblings and its MBA_CFG min/max bit (the
  // specification leaves the bit's scope open; it says how the core
  // resolves its threads' delays, so one value per core, written from any
  // of its threads).
  struct Core {
    std::vector<unsigned> cpus;
    uint64_t mba_cfg = 0;
    // STLB_QOS_MASK_n (STLB QoS, core scope: written from either SMT
    // thread, read back by both). Power-on: every way (the specification
    // gives no reset value; like the SDM's cache masks, all ones).
    std::vector<uint64_t> stlb_mask;
    uint64_t stlb_fills = 0;  // STLB_FILL_TRANSLATION writes taken
  };
  struct Cpu {
    bool present = false;  // in the platform (online at start-up)
    bool online = false;
    uint64_t pqr_assoc = 0;
    uint64_t qm_evtsel = 0;
    uint64_t l3_qos_cfg = 0;            // AMD: L3_QOS_CFG1 is per logical processor
    int core = -1;                      // index into cores_
    uint64_t misc_feature_control = 0;  // Intel prefetcher disable bits
    int l3 = -1;                        // index into l3_
    int l2 = -1;                        // index into l2_
    int snc = 0;                        // index of the CPU's NUMA node among its L3's nodes
    int node = -1;                      // that NUMA node (Intel; -1 elsewhere)
    // IA32_QoS_Core_BW_Thrtl_n (CBA): logical-processor scope, a byte per
    // CLOSID; cba_regs_ registers, 0 at power-on.
    std::vector<uint64_t> cba_thrtl;
    // LWP_CFG (the proposal's LWPMSR0), when the machine has LWP.
    uint64_t lwp_cfg = 0;
  };
  struct Tags {
    uint32_t closid = 0, rmid = 0;
  };
  // An entity of the workload model as seen by one domain.
  struct Entity {
    uint32_t closid, rmid;
    double footprint, bw_mbps, local_fraction;
    int snc;                    // the node (index within the L3) the activity belongs to
    int cpu;                    // the CPU it runs on, -1: spread over several
    int tid = -1;               // the thread of a thread workload, else -1
    double weight = 1;          // the share of the thread's activity this entity holds
    double write_fraction = 0;  // share of bw_mbps that is writes
    double stream_mbps = 0;     // Workload::stream_mbps
  };

  // All private helpers expect mu_ held.
  uint64_t now_us_locked() const;
  // Steps every domain exactly to `now`, before a change to what the model
  // counts: the interval up to the change is counted with the old state.
  void settle_locked(uint64_t now);
  // Steps `d` to `now` if at least `min_step_us` passed since its last step
  // (reads pass kStepUs, 1 ms: reading a counter need not step the model).
  void advance_locked(L3Dom& d, uint64_t now, uint64_t min_step_us);
  void step_model(L3Dom& d, double dt_us, uint64_t now);
  // The occupancy part of step_model: fills and replacements (model.cc).
  void step_occupancy(L3Dom& d, const std::vector<Entity>& ents,
                      const std::vector<double>& ent_target, const std::vector<uint64_t>& ent_mask,
                      double dt_us);
  void entities_of(size_t dom_index, std::vector<Entity>& out) const;
  void refresh_tracking_locked(uint64_t now);
  bool mask_ok(const Resource& r, uint64_t v) const;
  // The MBA delay the model applies to `e` (see the rules above); `pinned`
  // lists, per CPU of the domain, the CLOSIDs of thread workloads pinned to
  // it.
  double mba_delay(const L3Dom& d, const Entity& e,
                   const std::map<unsigned, std::vector<uint32_t>>& pinned) const;
  // The share of its bandwidth CBA leaves `e` (1: unthrottled), from the
  // throttle level of its CLOSID on its CPU (see the rules above).
  double cba_factor(const L3Dom& d, const Entity& e) const;
  uint64_t cba_level(const Cpu& c, uint32_t closid) const;
  // The L3_QOS_EXT_CFG bits CPUID enumerates (ABMC, SDCIAE); 0: no register.
  uint64_t ext_cfg_bits() const;
  Result<uint64_t> read_qm_ctr_locked(Cpu& c);
  // The QM_EVTSEL `c` reads and writes: its own (Intel), its domain's (AMD).
  uint64_t& qm_evtsel_of(Cpu& c);
  // Whether CDP is on for activity on `cpu` of `d` (-1: the domain's first
  // online CPU).
  bool cdp_on(const L3Dom& d, int cpu) const;
  Result<void> gp(unsigned cpu, uint32_t msr, const char* why) const;
  // Power-on values of a domain's registers and model state.
  void power_on_l3(L3Dom& d);
  void power_on_l2(L2Dom& d);
  bool any_online(const std::vector<unsigned>& cpus) const;
  // The first online CPU of a domain, or -1.
  int first_online(const std::vector<unsigned>& cpus) const;
  // Where activity tagged `rmid` on node `snc` of `d` is counted: a
  // physical RMID, or -1 when the RMID distribution mode drops it.
  long physical_rmid(const L3Dom& d, int snc, uint32_t rmid) const;
  // LWP (lwp_model.cc): feeds a thread's LWP unit with what entity `e` did
  // in `dt_us`, given the share of its footprint its CLOSID lets it keep in
  // the L3 (`fit`, 0..1) and the share of its bandwidth demand it achieved
  // (`throttle`, 0..1).
  void lwp_step_locked(const Entity& e, double fit, double throttle, double dt_us);
  LwpThreadStatus lwp_status_locked(int tid);
  // LWP_CFG as the simulated OS loads it at boot on `cpu`, and the checks
  // and effects of the LWP MSRs (lwp_model.cc).
  uint64_t lwp_boot_cfg(unsigned cpu) const;
  Result<void> lwp_write_cfg_locked(unsigned cpu, uint64_t v);
  uint64_t lwp_cbaddr_locked(unsigned cpu) const;
  Result<void> lwp_write_cbaddr_locked(unsigned cpu, uint64_t v);
  // The CPU a thread's LWP unit runs on (its workload's, else the first
  // online CPU).
  unsigned lwp_cpu_locked(int tid) const;
  // I/O RDT (io_rdt.cc).
  void init_io_rdt();
  void io_entities_of(size_t dom_index, std::vector<Entity>& out) const;
  // Telemetry (telemetry.cc).
  void init_telemetry();
  void advance_telemetry_locked(uint64_t now);

  Profile profile_;
  x86::X86Platform info_;
  x86::X86Platform os_info_;
  x86::HwLimits limits_;
  unsigned num_closid_any_ = 1;  // PQR_ASSOC CLOS limit
  unsigned num_rmid_any_ = 1;    // PQR_ASSOC / QM_EVTSEL RMID limit
  bool cpu_l3_cat_ = false;      // CPUID enumerates the CPU agents' L3 CAT
  bool cpu_l3_mon_ = false;      // ... and their L3 monitoring
  uint64_t l3_size_bytes_ = 0;   // one L3 domain's capacity
  unsigned phys_rmids_ = 1;      // physical RMIDs per L3 (CPUID.0xF.1:ECX + 1)
  bool snc_msr_ = false;         // MSR_RMID_SNC_CONFIG exists (SNC model, SNC on)
  // The writable MBA_CFG bits: MBA_CFG_MIN on a listed second-generation
  // MBA part without per-thread MBA, MBA_CFG_RAMBAE on a Resource-Aware MBA
  // part; 0: no MBA_CFG (any access #GPs). RAMBAE is stored only: the
  // specification gives no register for the per-resource values.
  uint64_t mba_cfg_bits_ = 0;
  bool mba_per_core_ = false;  // Intel MBA without per-thread throttling
  // CBA registers per CPU ((CLOS count + 7) / 8); 0: no CBA (CPUID.0x10.0:
  // EBX[5] clear), every access #GPs.
  unsigned cba_regs_ = 0;
  bool overflow_bit_ = false;  // CPUID.0xF.1:EAX[8]: QM_CTR has the Overflow bit
  // STLB QoS: IA32_CORE_CAPABILITIES exists (CPUID.7.0:EDX[30]); the
  // profile's STLB (absent: bit 0 of that register clear, no STLB registers).
  bool core_caps_ = false;
  std::optional<StlbProfile> stlb_;
  void power_on_core(Core& k);
  std::vector<RegisterValue> dump(bool all) const;

  mutable std::mutex mu_;
  std::vector<Cpu> cpus_;
  std::vector<L3Dom> l3_;
  std::vector<L2Dom> l2_;
  std::vector<Core> cores_;
  std::map<int, Tags> thread_tags_;
  std::map<int, Workload> thread_work_;
  std::map<int, Workload> task_work_;  // set_task_activity (a thread_work_ entry wins)
  std::map<unsigned, Workload> cpu_work_;
  bool tracking_dirty_ = true;
  unsigned fail_writes_ = 0;
  std::optional<unsigned> fail_cpu_;
  bool manual_ = false;
  uint64_t manual_us_ = 0;
  // Added to real time on the real clock: advance_ms() while on it, and the
  // difference left by a manual period (negative when the manual clock
  // was advanced less than real time passed; kept modulo 2^64).
  uint64_t offset_us_ = 0;
  std::chrono::steady_clock::time_point start_;

  // Telemetry model state: per package, per RMID, each telemetry event's
  // cumulative quantity (Joules, Farads or counts), indexed by EventId.
  struct TelemetryPkg {
    int package = 0;
    std::vector<unsigned> cpus;
    std::vector<std::array<double, 15>> count;  // [rmid][EventId]
    std::vector<uint8_t> seen;                  // [rmid]
  };
  std::map<int, LwpUnit> lwp_;  // per thread (the unit's state moves with it)
  // The machine's LWP enumeration (present false: no LWP, the LWP MSRs
  // #GP and arming is refused), and per CPU the copy of LWP_CFG[31:0] that
  // CPUID 8000_001Ch EAX reads (read without mu_ by cpuid()).
  x86::LwpCaps lwp_caps_;
  std::unique_ptr<std::atomic<uint32_t>[]> lwp_eax_;
  std::vector<TelemetryPkg> telem_pkgs_;

  // I/O RDT state.
  struct IoReg {
    bool rmid = false;    // IO_PQR_RMIDn (else IO_PQR_CLOSn)
    bool tagging = true;  // the link's RCS has this tagging (RTS / CTS)
    unsigned bytes = 0;
    uint64_t value = 0;
  };
  struct IoChan {
    x86::IoChannel ch;
    int l3 = -1;  // index into l3_ of the L3 its devices fill
  };
  std::vector<uint8_t> irdt_blob_;
  std::map<uint64_t, IoReg> io_regs_;  // by physical address
  std::vector<uint64_t> io_pages_;     // sorted
  std::vector<IoChan> io_chans_;
  std::map<uint32_t, Workload> chan_work_;
  // The index among its L3's nodes of NUMA node `node`, -1 when no CPU of
  // the channel's L3 is on that node.
  int io_node_index(const IoChan& c, int node) const;
  std::vector<PmtRegion> telem_regions_;
  uint64_t telem_last_us_ = 0;

  // Where keep_counter_state() keeps each L3 domain's and each telemetry
  // package's counters (empty: nowhere). The model works in its vectors and
  // copies them there after each step, before the read that stepped it
  // returns; a read copies what it changed (an Overflow bit's wrap count).
  struct KeptL3 {
    double* mbm[2];
    uint64_t* wraps[2];
    double* occ_way;
    uint64_t* tracked;
    // The domain's monitoring configuration, which the hardware keeps as
    // it keeps the counts (a restore finds it there and leaves the counts
    // alone): evt_cfg[0], evt_cfg[1], ext_cfg; and per ABMC counter its
    // configuration (enabled, is_clos, BwType, BwSrc packed) and count.
    uint64_t* cfg;
    uint64_t* cntr_cfg;
    double* cntr_bytes;
  };
  struct KeptPkg {
    double* count;
    uint64_t* seen;
  };
  std::vector<KeptL3> kept_l3_;
  std::vector<KeptPkg> kept_pkg_;
  void keep_l3_locked(const L3Dom& d);
  void keep_telemetry_locked();
};

}  // namespace resctrlfs::hw::sim

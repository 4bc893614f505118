// Defines the contract between the resctrl filesystem (fs/) and the hardware
// layer (hw/): the resources and domains the machine has, their capability
// fields, the controls fs/ programs and the counters and events it reads.
// Like the kernel's include/linux/resctrl.h it speaks of effects (which
// share of a resource a CLOSID may use, what an RMID's counter counted), so
// that any architecture can implement it: nothing here names a register, an
// instruction or how a backend is built. Architecture differences reach fs/
// only as capability values (cbm_len, min_cbm_bits, sparse_masks,
// delay_linear, throttle_mode, ...).
//
// This is the only hw/ header fs/ may include (tests/hw/contract_rule.sh
// keeps its text free of register and backend names).
//
// Units, as fs/ sees them:
//   - cache controls: a capacity bitmask (CBM), bit i = way-group i;
//   - bandwidth controls (MB, SMBA, CB): the value the user writes in schemata
//     without mba_MBps, within the resource's MembwCaps (min_bw..max_bw in
//     steps of bw_gran; a percentage of the peak for a throttling control,
//     an absolute rate for a rate-limiting one); hw/ turns it into what the
//     hardware takes.
//   - monitoring reads: bytes (occupancy already multiplied by the upscaling
//     factor, bandwidth counts already folded across counter wrap-around and
//     multiplied by the scale and any errata correction factor).
//   - telemetry reads (PERF_PKG): the package's cumulative count for the
//     RMID. Integer events are plain counts (cycles, uops, residency
//     cycles). The events event_is_floating_point() names (core_energy in
//     Joules, activity in Farads) are unsigned fixed point with
//     PerfPkgEvent::binary_bits fraction bits (at most kMaxBinaryBits):
//     value / 2^binary_bits is the quantity. How fs/ prints values and names
//     events is fs/'s business (fs/events.h).
//
// Threading: an Arch is not internally synchronised; the caller (fs/) holds
// its model lock (the rdtgroup_mutex analogue) across every call.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/conf_type.h"
#include "base/cpumask.h"
#include "base/result.h"

namespace resctrlfs::hw {

// The error of a failed register write (the hardware refused it, its CPU was
// offline, the way to the registers was lost), which every call below that
// writes registers returns: EIO with no text for the user. fs/ words it in
// last_cmd_status, as the kernel's fs/resctrl words the codes its
// architecture returns; an architecture never writes user text.
inline constexpr const char* kWriteFailureLog = "register write failed";
inline Error write_failure() { return Error::log_only(EIO, kWriteFailureLog); }
inline bool is_write_failure(const Error& e) {
  return e.code == EIO && !e.for_user && e.message == kWriteFailureLog;
}

// Resources in the kernel's enumeration order. The order matters: schemata
// lines are printed in the reverse of it. PERF_PKG (per-package telemetry) is a
// monitor-only resource: its slot in PlatformInfo::resources is never
// alloc_capable; its monitoring caps are PlatformInfo::perf_pkg.
//
// Ours, not kernel resources, after the kernel's so that its numbering
// stays as it is:
// - CB: cache bandwidth allocation, a bandwidth control like MB (MembwCaps,
//   a percentage of the unthrottled bandwidth, default max_bw) that
//   throttles each logical processor between its core's caches. Its control
//   domains are the L3 domains, as MB's. fs/ shows it only with the `cba`
//   mount option.
// - STLB: a cache-like allocation resource for the second-level TLB, one
//   control domain per physical core (mount option `stlb`).
enum class ResourceId : uint8_t {
  L3 = 0,
  L2 = 1,
  MB = 2,
  SMBA = 3,
  PERF_PKG = 4,
  CB = 5,
  STLB = 6
};
inline constexpr int kNumResources = 7;

// Which half of a CDP-split cache resource a configuration refers to (one
// type with the schemata library: base/conf_type.h).
using resctrlfs::ConfType;

// The CDP index rule: with CDP enabled, CLOSID c uses hardware control index
// 2c for DATA and 2c+1 for CODE; otherwise index c.
constexpr uint32_t cdp_hw_index(uint32_t closid, ConfType t) {
  switch (t) {
    case ConfType::DATA:
      return closid * 2;
    case ConfType::CODE:
      return closid * 2 + 1;
    case ConfType::NONE:
      break;
  }
  return closid;
}

// Monitoring event ids, numbered as the kernel's enum resctrl_event_id
// numbers them: the L3 events first; the telemetry (PERF_PKG) events follow
// in the kernel's order, which is also the order of files in a
// mon_PERF_PKG_XX directory and of lines in its mon_features.
enum class EventId : uint8_t {
  LLC_OCCUPANCY = 1,
  MBM_TOTAL = 2,
  MBM_LOCAL = 3,
  CORE_ENERGY = 4,
  ACTIVITY = 5,
  STALLS_LLC_HIT = 6,
  C1_RES = 7,
  UNHALTED_CORE_CYCLES = 8,
  STALLS_LLC_MISS = 9,
  AUTO_C6_RES = 10,
  UNHALTED_REF_CYCLES = 11,
  UOPS_RETIRED = 12,
  INST_RETIRED = 13,
  PCNT = 14,
};

// The resource an event belongs to.
constexpr bool is_perf_pkg_event(EventId e) {
  return e >= EventId::CORE_ENERGY && e <= EventId::PCNT;
}

// The events whose values are fixed point (PerfPkgEvent::binary_bits
// fraction bits); every other event is an unsigned integer count. An
// architecture may not make any other event fractional.
constexpr bool event_is_floating_point(EventId e) {
  return e == EventId::CORE_ENERGY || e == EventId::ACTIVITY;
}

// The largest number of fraction bits an architecture may report (fs/
// shows at most 9 decimal places).
inline constexpr unsigned kMaxBinaryBits = 27;

// The resource's name, as the kernel's rdt_resource::name ("L3", "L2",
// "MB", "SMBA", "PERF_PKG"; "CB" is ours).
constexpr const char* resource_name(ResourceId r) {
  switch (r) {
    case ResourceId::L3:
      return "L3";
    case ResourceId::L2:
      return "L2";
    case ResourceId::MB:
      return "MB";
    case ResourceId::SMBA:
      return "SMBA";
    case ResourceId::PERF_PKG:
      return "PERF_PKG";
    case ResourceId::CB:
      return "CB";
    case ResourceId::STLB:
      return "STLB";
  }
  return "unknown";
}

enum class ThrottleMode : uint8_t { UNDEFINED = 0, MAX = 1, PER_THREAD = 2 };

// A control domain (one set of control registers shared by its CPUs).
struct CtrlDomain {
  int id = 0;    // cache id (L2/L3), the L3 id for MB/SMBA, the core id for STLB
  CpuMask cpus;  // CPUs sharing this domain's registers
};

// A monitoring domain (one set of RMID counters).
//
// Without Sub-NUMA Clustering (MonCaps::snc_ways == 1) a domain is one L3
// cache: id == l3_id == the cache id. With SNC the L3 monitoring scope is the
// NUMA node: one domain per node, id = the node id, l3_id = the id of the L3
// cache the node shares with its sibling nodes (what mon_L3_XX is named
// after; its files sum the domains with that l3_id).
struct MonDomain {
  int id = 0;  // L3 cache id, NUMA node id under SNC; for PERF_PKG the package id
  CpuMask cpus;
  int l3_id = -1;  // the L3 cache id this domain belongs to (== id without SNC)
};

struct CacheCaps {
  unsigned cbm_len = 0;         // bits in the capacity mask
  uint32_t shareable_bits = 0;  // bits other agents may use (info/*/shareable_bits)
  unsigned min_cbm_bits = 1;
  bool sparse_masks = false;  // non-contiguous masks allowed
  bool cdp_capable = false;
  bool io_alloc_capable = false;  // I/O allocation (L3 only); see Arch::set_io_alloc_enabled
  uint64_t cache_size_bytes = 0;  // size of one domain's cache (for the size file)
  uint32_t full_mask() const { return cbm_len >= 32 ? 0xffffffffU : ((1U << cbm_len) - 1U); }
};

struct MembwCaps {
  unsigned min_bw = 0;    // info/MB/min_bandwidth
  unsigned bw_gran = 1;   // info/MB/bandwidth_gran
  unsigned max_bw = 100;  // the maximum (and default) schemata value
  bool delay_linear = false;
  bool arch_needs_linear = false;  // the architecture supports linear throttling only
  ThrottleMode throttle_mode = ThrottleMode::UNDEFINED;
};

// One allocation resource as fs/ sees it.
struct Resource {
  ResourceId rid = ResourceId::L3;
  bool alloc_capable = false;
  unsigned num_closid = 0;  // hardware CLOSIDs (not yet halved for CDP)
  // Capacity-bitmask resources: the caches and the STLB (whose "ways" are
  // the TLB's).
  bool is_cache() const {
    return rid == ResourceId::L3 || rid == ResourceId::L2 || rid == ResourceId::STLB;
  }
  // Ours: the resource is shown only in a mount with this option (e.g.
  // "stlb"), never in the default tree; null for the kernel's resources.
  // Set for the STLB and for an L3 allocation the kernel does not find
  // (parts that have it without announcing it).
  const char* mount_option = nullptr;
  CacheCaps cache;                       // valid when is_cache()
  MembwCaps membw;                       // valid for MB / SMBA
  std::vector<CtrlDomain> ctrl_domains;  // sorted by id
};

// L3 monitoring capabilities.
struct MonCaps {
  bool capable = false;
  unsigned num_rmids = 0;        // info/L3_MON/num_rmids (per SNC node: hardware count / snc_ways)
  unsigned occupancy_scale = 1;  // bytes per counter unit (per SNC node: hardware scale / snc_ways)
  // Sub-NUMA Clustering: NUMA nodes sharing one L3 cache (1: no SNC). When
  // > 1, mon_domains are per node (see MonDomain), RMIDs are logical
  // (read_event maps them to the node's physical RMID) and the MBA control
  // scope (L3) differs from the monitoring scope, so mba_MBps is refused.
  unsigned snc_ways = 1;
  unsigned counter_width = 24;  // MBM counter width in bits
  std::vector<EventId> events;  // enabled events in event-id order
  // Upper limit for max_threshold_occupancy writes (Linux's
  // resctrl_rmid_realloc_limit): the cache size the architecture reports
  // for it (the L3, or the per-core L2 on some parts). default_threshold is
  // derived from it.
  uint64_t l3_cache_size_bytes = 0;
  unsigned default_threshold = 0;  // default max_threshold_occupancy (bytes)
  // Configurable bandwidth events: mbm_*_bytes_config files. Mask of
  // supported transaction bits.
  bool bmec = false;
  uint32_t bmec_supported_mask = 0;  // e.g. 0x7f
  uint32_t bmec_default_total = 0;   // 0x7f
  uint32_t bmec_default_local = 0;   // 0x15
  // Assignable counters per monitoring domain (mbm_assign_mode "mbm_event").
  bool abmc = false;
  unsigned num_mbm_cntrs = 0;
  // The transactions an assignable counter counts can be chosen (Linux's
  // resctrl_mon::mbm_cntr_configurable): info/L3_MON/event_configs/*/
  // event_filter is then writable (0644), otherwise read-only.
  bool mbm_cntr_configurable = false;
  std::vector<MonDomain> mon_domains;  // sorted by id
};

// One enabled telemetry event and its fixed-point format.
struct PerfPkgEvent {
  EventId id = EventId::CORE_ENERGY;
  unsigned binary_bits = 0;  // fraction bits (0 for integer events)
};

// Telemetry monitoring capabilities (per-RMID energy and performance
// counters kept per package: one monitor domain per package).
struct PerfPkgMonCaps {
  bool capable = false;
  unsigned num_rmids = 0;              // info/PERF_PKG_MON/num_rmids
  std::vector<PerfPkgEvent> events;    // enabled events in event-id order
  std::vector<MonDomain> mon_domains;  // packages whose counters can be read, sorted
};

// The machine as decoded at start-up, then kept current across CPU hotplug:
// `online`, every resource's ctrl_domains and mon.mon_domains change when
// Arch::offline_cpu()/online_cpu() run (a domain is listed only while at
// least one of its CPUs is online, as in the kernel's domain lists). Every
// other field is fixed for the life of the Arch. The per-CPU topology
// vectors cover offline CPUs too, so a CPU that comes back finds its domains.
struct PlatformInfo {
  unsigned nr_cpus = 0;               // nr_cpu_ids: bitmap width for cpus files
  CpuMask online;                     // online CPUs (changes with hotplug)
  std::vector<int> cpu_package;       // package id per CPU
  std::vector<int> cpu_l2_id;         // L2 cache id per CPU (-1 if none)
  std::vector<int> cpu_l3_id;         // L3 cache id per CPU (-1 if none)
  std::vector<int> cpu_node;          // NUMA node per CPU (-1 if unknown)
  std::vector<int> cpu_core;          // physical core id per CPU (STLB domains; -1 if none)
  Resource resources[kNumResources];  // indexed by ResourceId
  MonCaps mon;                        // L3 monitoring
  PerfPkgMonCaps perf_pkg;            // telemetry monitoring
  // Cache pseudo-locking is offered (the architecture knows how to keep a
  // region resident on this part).
  bool pseudo_lock_capable = false;
  const Resource& res(ResourceId r) const { return resources[static_cast<int>(r)]; }
};

// How many RMIDs groups may use: the smallest num_rmids of the monitor
// resources present (an RMID must be valid in every one of them), 0 when
// the platform cannot monitor. The kernel's system-wide RMID index limit.
inline unsigned num_rmid_idx(const PlatformInfo& p) {
  unsigned n = 0;
  if (p.mon.capable) n = p.mon.num_rmids;
  if (p.perf_pkg.capable) n = n == 0 ? p.perf_pkg.num_rmids : std::min(n, p.perf_pkg.num_rmids);
  return n;
}

// One control value change: `value` for CLOSID `closid` (schema-level
// CLOSID, before the CDP index rule) of resource `rid` half `type` on
// control domain `domain_id`.
struct CtrlUpdate {
  ResourceId rid = ResourceId::L3;
  ConfType type = ConfType::NONE;
  int domain_id = 0;
  uint32_t closid = 0;
  uint32_t value = 0;
};

// Outcome of a monitoring read that is not a number. fs/ prints
// "Error" for kError and "Unavailable" for kUnavailable.
enum class ReadError : uint8_t { kNone = 0, kError = 1, kUnavailable = 2 };

struct CounterValue {
  ReadError err = ReadError::kNone;
  uint64_t bytes = 0;  // bytes for L3 events; the raw telemetry value for PERF_PKG
};

// A device channel (ours): a path by which non-CPU agents (PCIe functions,
// integrated accelerators, coherent accelerators) fill the L3 and use
// memory bandwidth. Its traffic carries one CLOSID and one RMID, the same
// numbers threads use, so a group's cache mask confines it and a group's
// counters count it.
struct IoChannelDevice {
  std::string bdf;      // "SSSS:BB:DD.F" of the device or of the root port above it
  unsigned vc = 0;      // the device's virtual channel mapped to this channel
  bool shared = false;  // the channel is shared with another device
  bool operator==(const IoChannelDevice&) const = default;
};

struct IoChannelInfo {
  uint32_t id = 0;            // stable; as the platform's firmware numbers it
  std::string link;           // "pcie" (also CXL.io) or "cxl.cache"
  bool clos_tagging = false;  // its traffic can carry a CLOSID
  bool rmid_tagging = false;  // its traffic can carry an RMID
  std::vector<IoChannelDevice> devices;
  bool operator==(const IoChannelInfo&) const = default;
};

// Whether the machine can apply channel tags to allocation / monitoring.
struct IoTagCaps {
  bool alloc = false;
  bool mon = false;
};

class ArchEvents;

// Per-thread tags: the (closid, rmid) each thread runs with, for a backend
// that can make them follow a thread from CPU to CPU as the kernel does on
// every context switch. A backend that cannot (user space cannot retag a
// CPU at each context switch) has none: Arch::thread_tagger() is null, and
// fs/ then shows task-only groups' monitoring files as Unavailable.
class ThreadTagger {
 public:
  virtual ~ThreadTagger() = default;
  // Thread `tid` runs with (closid, rmid) from now on (0/0: the default
  // group).
  virtual void set_thread_tags(int tid, uint32_t closid, uint32_t rmid) = 0;
  // Thread `tid` has exited; its tags are forgotten.
  virtual void thread_exited(int tid) = 0;
};

// The downcalls fs/ makes; one implementation per architecture.
class Arch {
 public:
  virtual ~Arch() = default;

  // The decoded platform. The reference stays valid for the life of the
  // Arch; its online CPUs and domain lists change only inside
  // offline_cpu()/online_cpu() (see PlatformInfo).
  virtual const PlatformInfo& info() const = 0;

  // Applies a batch of control changes, all or nothing. Only registers whose
  // value differs from the current configuration are written, each on one
  // CPU of its domain. If any register write fails, every register already
  // written by this call is restored and write_failure() is returned.
  // Cost: one register write per changed value.
  virtual Result<void> update_ctrls(const std::vector<CtrlUpdate>& updates) = 0;

  // The current configuration value (from hw/'s shadow of the registers).
  virtual uint32_t get_ctrl(ResourceId rid, ConfType type, int domain_id,
                            uint32_t closid) const = 0;

  // The value a CLOSID holds after reset (full mask / max bandwidth).
  virtual uint32_t default_ctrl(ResourceId rid) const = 0;

  // Enables or disables CDP for L3 or L2: while enabled each CLOSID has a
  // CODE and a DATA control on every domain of the resource (cdp_hw_index).
  // Cost: one register write per domain. Fails with EINVAL if not
  // cdp_capable.
  virtual Result<void> set_cdp_enabled(ResourceId rid, bool enable) = 0;
  virtual bool cdp_enabled(ResourceId rid) const = 0;

  // Resets every CLOSID of every allocation resource to default_ctrl() in
  // every domain (unmount, start-up). Cost: one write per register.
  virtual Result<void> reset_all_ctrls() = 0;

  // Makes `cpu` run with (closid, rmid): what runs on it from now on is
  // limited by the CLOSID's controls and counted by the RMID's counters.
  // With CDP the schema CLOSID is given (the CODE and DATA controls follow
  // from it by cdp_hw_index). Cost: one register write.
  virtual Result<void> set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) = 0;
  // set_cpu_assoc for several CPUs in one go (a backend that reaches the
  // hardware through another process sends them as one request). Sets ok[i] to whether entry i was
  // written; a failed entry does not stop the others, and says in `error`
  // what failed in the backend's own words (the CPU, the register, the
  // value and why), for an operator's log: fs/ passes it on unread.
  struct CpuAssoc {
    unsigned cpu = 0;
    uint32_t closid = 0;
    uint32_t rmid = 0;
    bool ok = false;
    std::string error;
  };
  virtual void set_cpus_assoc(std::vector<CpuAssoc>& assocs) {
    for (CpuAssoc& a : assocs) a.ok = set_cpu_assoc(a.cpu, a.closid, a.rmid).ok();
  }

  // The backend's per-thread tagging, or null when it cannot make a
  // thread's (closid, rmid) follow the thread (see ThreadTagger).
  virtual ThreadTagger* thread_tagger() { return nullptr; }

  // Reads event `ev` of `rmid` on monitoring domain `domain_id`, folding
  // counter wrap-around into a running total (MBM). Under SNC `rmid` is the
  // logical RMID and `domain_id` a node; hw/ reads that node's physical RMID.
  // Error/Unavailable come from the hardware's status. With assignable
  // counters enabled `cntr_id` names the assigned counter to read instead
  // of the RMID. Cost: two register accesses.
  virtual CounterValue read_event(int domain_id, uint32_t rmid, EventId ev,
                                  std::optional<unsigned> cntr_id = std::nullopt) = 0;

  // Reads telemetry event `ev` (is_perf_pkg_event) of `rmid` on package
  // `package_id`: the sum over that package's counter sets for the event,
  // in the units of the header comment. kUnavailable when no counter set of
  // the package has valid data for the RMID yet (nothing has run with it);
  // kError when the counter cannot be read or the event is not enabled.
  // Counts are the hardware's cumulative values: nothing is reset when an
  // RMID is reused. Cost: one read per counter set of the package.
  virtual CounterValue read_perf_pkg_event(int package_id, uint32_t rmid, EventId ev) = 0;

  // Restarts the count of (domain, rmid, ev) at 0: the hardware counter's
  // value now becomes the baseline later reads count from (the kernel does
  // this when an RMID is allocated, so traffic between mkdir and the first
  // read is counted). Cost: two register accesses.
  virtual void reset_event(int domain_id, uint32_t rmid, EventId ev) = 0;
  // Forgets the running state of every RMID and MBM event of a domain whose
  // hardware counters were cleared: they count from a raw value of 0.
  virtual void reset_domain_events(int domain_id) = 0;

  // Configurable bandwidth events (MonCaps::bmec): the event configuration
  // (transaction mask) of an MBM event on a
  // domain. Writing a different value makes the hardware clear every MBM
  // counter of the domain (both events, every RMID; the next read of each
  // reports Unavailable), and every count starts again from 0.
  virtual Result<void> set_event_config(int domain_id, EventId ev, uint32_t config) = 0;
  virtual uint32_t event_config(int domain_id, EventId ev) const = 0;

  // io_alloc: while enabled, cache lines that I/O devices
  // inject into the L3 may only use the ways of the L3 mask of the highest
  // CLOSID (num_closid - 1, or num_closid / 2 - 1 with CDP, where CODE and
  // DATA must hold the same mask). That mask is an ordinary control value
  // (update_ctrls / get_ctrl); reserving the CLOSID is fs/'s business.
  // Turns it on or off for every online CPU of every L3 control domain
  // (counter assignment is left as it is). EINVAL unless `rid` is
  // io_alloc_capable; a failed write restores the CPUs already changed and
  // returns EIO. Cost: one register write per CPU of the L3 domains; none
  // when the state does not change.
  virtual Result<void> set_io_alloc_enabled(ResourceId rid, bool enable) = 0;
  virtual bool io_alloc_enabled(ResourceId rid) const = 0;

  // Assignable counters (MonCaps::abmc): enables or disables counter
  // assignment mode (all domains).
  virtual Result<void> set_abmc_enabled(bool enable) = 0;
  // Binds counter `cntr_id` of `domain_id` to (rmid, ev) with transaction
  // filter `evt_cfg`, or unbinds it. Resets the counter's count.
  virtual Result<void> config_cntr(int domain_id, unsigned cntr_id, uint32_t rmid, EventId ev,
                                   uint32_t evt_cfg, bool assign) = 0;

  // CPU hotplug, the arch half of the kernel's cpuhp callbacks. The caller
  // (fs/) has already done its own part of an offline (the CPU left every
  // group) and does its part of an online after this returns.
  //
  // offline_cpu: `cpu` must be online and not the last online CPU. It
  // leaves info().online and every domain's CPU mask; each domain left
  // without CPUs is announced through `events` and removed. The (closid,
  // rmid) the CPU ran with is forgotten (the hardware loses it when the CPU
  // powers down).
  //
  // online_cpu: `cpu` must be offline and powered (its registers accessible).
  // It joins info().online and its domains; a domain that was absent is
  // created with every CLOSID's control at default_ctrl() written to the
  // hardware, CDP as currently enabled, fresh MBM state and the hardware's
  // event configuration, then announced through `events`. The CPU runs with
  // CLOSID 0 / RMID 0. EIO if a register write fails (the CPU then stays
  // offline).
  //
  // An Arch that cannot follow hotplug answers EOPNOTSUPP.
  virtual Result<void> offline_cpu(unsigned cpu, ArchEvents* events) {
    (void)cpu;
    (void)events;
    return Error::make(EOPNOTSUPP, "CPU hotplug is not supported by this backend");
  }
  virtual Result<void> online_cpu(unsigned cpu, ArchEvents* events) {
    (void)cpu;
    (void)events;
    return Error::make(EOPNOTSUPP, "CPU hotplug is not supported by this backend");
  }

  // Cache pseudo-locking (info().pseudo_lock_capable): makes `cbm` of cache
  // domain `domain_id` of `rid` a pseudo-locked region loaded through
  // CLOSID `closid`. Programs the CLOSID's mask on that domain if it
  // differs, then runs the architecture's part of the locking sequence on
  // the domain's first CPU (prefetching off, run with `closid`, back to the
  // CPU's own tags, prefetching as it was). The memory reads that fill the
  // region between those steps cannot be done from user space, so on real
  // hardware the region is reserved but holds no data. Records the region.
  // EINVAL if not capable or not a cache domain; EBUSY if the domain already
  // holds a region; EIO if a register write fails (the registers already
  // written are restored). Cost: five register accesses (+1 mask write).
  virtual Result<void> pseudo_lock(ResourceId rid, int domain_id, uint32_t closid,
                                   uint32_t cbm) = 0;
  // Forgets the region of (rid, domain_id), if any (rmdir, unmount). The
  // CLOSID's mask is left as it is, as Linux leaves it. No register access.
  virtual void pseudo_unlock(ResourceId rid, int domain_id) = 0;
  // The recorded region's mask on (rid, domain_id), or 0.
  virtual uint32_t pseudo_locked_cbm(ResourceId rid, int domain_id) const = 0;

  // ---- Device channels (ours; see IoChannelInfo). A machine without them
  // lists none and refuses the rest with ENODEV.
  virtual IoTagCaps io_tag_caps() const { return {}; }
  virtual std::vector<IoChannelInfo> io_channels() const { return {}; }
  // From now on channel `id`'s traffic carries `closid` (if the channel can
  // carry a CLOSID) and `rmid` (if it can carry an RMID); the CLOSID is
  // applied before the RMID. EINVAL for an unknown channel or an id beyond
  // the machine's CLOSIDs / RMIDs; write_failure() when the
  // hardware write fails, the channel's tags then unknown until the next
  // successful call.
  virtual Result<void> set_io_channel_tags(uint32_t id, uint32_t closid, uint32_t rmid) {
    (void)id;
    (void)closid;
    (void)rmid;
    return Error::make(ENODEV);
  }
  // The tags the last successful set_io_channel_tags gave channel `id`
  // (closid, rmid); EINVAL for an unknown channel or one never set.
  virtual Result<std::pair<uint32_t, uint32_t>> io_channel_tags(uint32_t id) const {
    (void)id;
    return Error::make(ENODEV);
  }
  // Whether channel tags take effect, on every L3 domain: `alloc` for cache
  // allocation (off: devices fill as CLOSID 0 would), `mon` for monitoring
  // (off: device traffic is counted in no RMID). Power-on: both off. EINVAL
  // for a kind io_tag_caps() lacks; EIO when a domain's write fails (the
  // domains already written are restored).
  virtual Result<void> set_io_tagging(bool alloc, bool mon) {
    (void)alloc;
    (void)mon;
    return Error::make(ENODEV);
  }
  virtual IoTagCaps io_tagging() const { return {}; }
};

// Up-calls hw/ makes into its user during CPU hotplug (the kernel's
// resctrl_online_*_domain / resctrl_offline_*_domain). They run inside
// Arch::online_cpu()/offline_cpu(), so under the caller's model lock.
//   - *_online: the domain has just been added to info() (its registers
//     already hold the defaults, its MBM state is fresh);
//   - *_offline: the domain's last CPU is leaving; the domain is still in
//     info() during the call and is removed right after it.
class ArchEvents {
 public:
  virtual ~ArchEvents() = default;
  virtual void ctrl_domain_online(ResourceId rid, int domain_id) = 0;
  virtual void ctrl_domain_offline(ResourceId rid, int domain_id) = 0;
  // Monitoring domains of the L3 monitor resource.
  virtual void mon_domain_online(int domain_id) = 0;
  virtual void mon_domain_offline(int domain_id) = 0;
  // Monitoring domains of the telemetry resource (PERF_PKG, one per
  // package). Only platforms with info().perf_pkg.capable make them.
  virtual void perf_pkg_domain_online(int package_id) { (void)package_id; }
  virtual void perf_pkg_domain_offline(int package_id) { (void)package_id; }
};

}  // namespace resctrlfs::hw

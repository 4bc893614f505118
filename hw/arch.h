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
//     MonEvent::binary_bits fraction bits (at most kMaxBinaryBits):
//     value / 2^binary_bits is the quantity. How fs/ prints values and names
//     events is fs/'s business (fs/events.h).
//
// Threading: an Arch is not internally synchronised. The rule its caller
// (fs/) follows, and hw/ relies on:
//   - every call that reaches the hardware (update_ctrls, set_*, reset_*,
//     read_counter, config_cntr, pseudo_lock, the hotplug calls, ...) is
//     made with the caller's command lock held (the rdtgroup_mutex
//     analogue), so such calls run one at a time;
//   - every call, including the ones that only read hw/'s own state
//     (info(), get_ctrl(), cdp_enabled(), event_config(), ...), is made with
//     the caller's model lock held, which orders them against the
//     hardware-reaching calls;
//   - a hardware-reaching call may let go of the caller's model lock while
//     it waits on something slow outside the process: it marks that wait
//     with a BlockingSection (base/blocking.h), which releases the lock
//     through the calling thread's BlockingHook and takes it back before
//     the call goes on. Inside such a wait the call touches nothing but its
//     transport, so the read-only calls other threads make under the model
//     lock meanwhile see hw/'s state as it was before the call (the
//     shadow of the controls changes only after the hardware accepted the
//     write). Without a hook installed a BlockingSection does nothing.
//   - the ArchEvents up-calls run on the calling thread inside
//     offline_cpu()/online_cpu(), with both locks held.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <iterator>
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
// lines are printed in the reverse of it. Each resource carries its control
// capabilities and its monitoring capabilities (Resource::mon), as the
// kernel's struct rdt_resource does. PERF_PKG (per-package telemetry) is a
// monitor-only resource: its slot is never alloc_capable.
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
constexpr ResourceId event_resource(EventId e) {
  return is_perf_pkg_event(e) ? ResourceId::PERF_PKG : ResourceId::L3;
}

// The events whose values are fixed point (MonEvent::binary_bits
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

// The scope of a resource's domains (the kernel's enum resctrl_scope): which
// CPUs share one control or monitoring domain. The domain's id is the id of
// that unit (cache id, NUMA node id, package id, core id).
enum class Scope : uint8_t {
  NONE = 0,      // the resource has no such domains
  L2_CACHE = 1,  // one domain per L2 cache instance
  L3_CACHE = 2,  // one domain per L3 cache instance
  NODE = 3,      // one domain per NUMA node (an L3 split into nodes: SNC)
  PACKAGE = 4,   // one domain per package
  CORE = 5,      // one domain per physical core
};
inline constexpr int kNumScopes = 6;

// How a resource's schemata value is written and what fs/ checks it against
// (the kernel's enum resctrl_schema_fmt, with its range split in two):
//   - BITMAP: a capacity bitmask within CacheCaps;
//   - PERCENT: a share of the peak within MembwCaps (min_bw..max_bw, steps
//     of bw_gran);
//   - RATE: an absolute rate within MembwCaps.
enum class SchemaFormat : uint8_t { BITMAP = 0, PERCENT = 1, RATE = 2 };

enum class ThrottleMode : uint8_t { UNDEFINED = 0, MAX = 1, PER_THREAD = 2 };

// A control domain (one set of control registers shared by its CPUs).
struct CtrlDomain {
  int id = 0;    // cache id (L2/L3), the L3 id for MB/SMBA, the core id for STLB
  CpuMask cpus;  // CPUs sharing this domain's registers
};

// A monitoring domain (one set of RMID counters) of a monitor-capable
// resource; its id is the id of the unit of the resource's MonCaps::scope.
//
// For the L3 resource without Sub-NUMA Clustering (MonCaps::snc_ways == 1)
// a domain is one L3 cache: id == l3_id == the cache id. With SNC the L3
// monitoring scope is Scope::NODE: one domain per node, id = the node id,
// l3_id = the id of the L3 cache the node shares with its sibling nodes
// (what mon_L3_XX is named after; its files sum the domains with that
// l3_id). Other resources leave l3_id at -1.
struct MonDomain {
  int id = 0;  // the scope unit's id (cache, node, package)
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

// One monitoring event a resource counts, and its value format.
struct MonEvent {
  MonEvent() = default;
  MonEvent(EventId e, unsigned bits = 0) : id(e), binary_bits(bits) {}  // NOLINT: implicit
  EventId id = EventId::LLC_OCCUPANCY;
  unsigned binary_bits = 0;  // fraction bits (event_is_floating_point); 0 otherwise
  bool operator==(const MonEvent&) const = default;
};

// Event configuration (ours: the kernel's mbm_*_bytes_config files): the
// transactions an MBM event counts can be chosen per monitoring domain.
struct EventConfigCaps {
  bool capable = false;
  uint32_t supported_mask = 0;  // transaction bits the hardware knows (e.g. 0x7f)
  uint32_t default_total = 0;   // mbm_total_bytes' power-on configuration
  uint32_t default_local = 0;   // mbm_local_bytes' power-on configuration
};

// Counter assignment (the kernel's mbm_assign_mode "mbm_event"): a limited
// number of counters per monitoring domain, each bound to one (RMID, event).
struct CntrAssignCaps {
  bool capable = false;
  unsigned num_cntrs = 0;  // counters per monitoring domain
  // The transactions an assigned counter counts can be chosen (Linux's
  // resctrl_mon::mbm_cntr_configurable): info/L3_MON/event_configs/*/
  // event_filter is then writable (0644), otherwise read-only.
  bool configurable = false;
};

// A resource's monitoring capabilities (the kernel's rdt_resource::mon and
// mon_capable). Resources are monitored in ResourceId order
// (for_each_mon_capable).
struct MonCaps {
  bool capable = false;       // mon_capable
  Scope scope = Scope::NONE;  // the monitoring domains' scope
  unsigned num_rmids = 0;     // info/<res>_MON/num_rmids (per SNC node: hardware count / snc_ways)
  unsigned occupancy_scale = 1;  // bytes per occupancy counter unit (per SNC node: / snc_ways)
  // Sub-NUMA Clustering (L3): NUMA nodes sharing one L3 cache (1: no SNC).
  // When > 1, the scope is Scope::NODE, mon_domains are per node (see
  // MonDomain), RMIDs are logical (read_counter maps them to the node's
  // physical RMID) and the bandwidth control scope (L3) differs from the
  // monitoring scope, so mba_MBps is refused.
  unsigned snc_ways = 1;
  unsigned counter_width = 24;   // bandwidth counter width in bits
  std::vector<MonEvent> events;  // enabled events in event-id order
  // Upper limit for max_threshold_occupancy writes (Linux's
  // resctrl_rmid_realloc_limit): the cache size the architecture reports
  // for it (the L3, or the per-core L2 on some parts). default_threshold is
  // derived from it.
  uint64_t realloc_limit_bytes = 0;
  unsigned default_threshold = 0;  // default max_threshold_occupancy (bytes)
  EventConfigCaps evt_cfg;
  CntrAssignCaps cntr_assign;
  std::vector<MonDomain> mon_domains;  // sorted by id

  bool has_event(EventId e) const {
    return std::any_of(events.begin(), events.end(), [e](const MonEvent& m) { return m.id == e; });
  }
  // The fraction bits of event `e` (0 when it is not enabled or an integer).
  unsigned binary_bits(EventId e) const {
    for (const MonEvent& m : events)
      if (m.id == e) return m.binary_bits;
    return 0;
  }
  std::vector<EventId> event_ids() const {
    std::vector<EventId> ids;
    for (const MonEvent& m : events) ids.push_back(m.id);
    return ids;
  }
};

// One resource as fs/ sees it (the kernel's struct rdt_resource).
struct Resource {
  ResourceId rid = ResourceId::L3;
  // ---- control
  bool alloc_capable = false;
  unsigned num_closid = 0;                         // hardware CLOSIDs (not yet halved for CDP)
  Scope ctrl_scope = Scope::NONE;                  // the control domains' scope
  SchemaFormat schema_fmt = SchemaFormat::BITMAP;  // what a schemata value is
  bool is_bitmap() const { return schema_fmt == SchemaFormat::BITMAP; }
  // Ours: the resource is shown only in a mount with this option (e.g.
  // "stlb"), never in the default tree; null for the kernel's resources.
  // Set for the STLB and for an L3 allocation the kernel does not find
  // (parts that have it without announcing it).
  const char* mount_option = nullptr;
  CacheCaps cache;                       // valid when is_bitmap()
  MembwCaps membw;                       // valid for PERCENT / RATE
  std::vector<CtrlDomain> ctrl_domains;  // sorted by id
  // ---- monitoring
  MonCaps mon;
};

// The machine as decoded at start-up, then kept current across CPU hotplug:
// `online`, every resource's ctrl_domains and mon.mon_domains change when
// Arch::offline_cpu()/online_cpu() run (a domain is listed only while at
// least one of its CPUs is online, as in the kernel's domain lists). Every
// other field is fixed for the life of the Arch. The per-scope topology
// covers offline CPUs too, so a CPU that comes back finds its domains.
struct PlatformInfo {
  unsigned nr_cpus = 0;  // nr_cpu_ids: bitmap width for cpus files
  CpuMask online;        // online CPUs (changes with hotplug)
  // Per scope, per CPU: the id of the scope unit the CPU belongs to (-1 if
  // none or unknown); empty for a scope the machine does not describe.
  // A CPU's domain of a resource is the domain whose id is
  // cpu_id(cpu, <the resource's scope>).
  std::vector<int> scope_ids[kNumScopes];
  Resource resources[kNumResources];  // indexed by ResourceId
  // Cache pseudo-locking is offered (the architecture knows how to keep a
  // region resident on this part).
  bool pseudo_lock_capable = false;
  // A monitoring id is only meaningful together with the CLOSID (the
  // kernel's CONFIG_RESCTRL_RMID_DEPENDS_ON_CLOSID): fs/ then allocates a
  // monitor group's RMID among the ids of its parent's CLOSID, and RMID
  // indexes (Arch::rmid_idx_encode) differ from RMIDs.
  bool rmid_depends_on_closid = false;

  const Resource& res(ResourceId r) const { return resources[static_cast<int>(r)]; }
  Resource& res(ResourceId r) { return resources[static_cast<int>(r)]; }
  std::vector<int>& cpu_ids(Scope s) { return scope_ids[static_cast<int>(s)]; }
  const std::vector<int>& cpu_ids(Scope s) const { return scope_ids[static_cast<int>(s)]; }
  // The id of `cpu`'s unit of scope `s`, -1 if none.
  int cpu_id(unsigned cpu, Scope s) const {
    const std::vector<int>& v = cpu_ids(s);
    return cpu < v.size() ? v[cpu] : -1;
  }
  // Whether any resource can monitor.
  bool mon_capable() const {
    return std::any_of(std::begin(resources), std::end(resources),
                       [](const Resource& r) { return r.mon.capable; });
  }
};

// The kernel's for_each_mon_capable_rdt_resource: `fn(const Resource&)` for
// every monitor-capable resource, in ResourceId order.
template <typename Fn>
void for_each_mon_capable(const PlatformInfo& p, Fn&& fn) {
  for (const Resource& r : p.resources)
    if (r.mon.capable) fn(r);
}

// How many RMID indexes groups may use: the smallest num_rmids of the
// monitor-capable resources (an index must be valid in every one of them),
// 0 when the platform cannot monitor. The kernel's system-wide RMID index
// limit (resctrl_arch_system_num_rmid_idx).
inline unsigned num_rmid_idx(const PlatformInfo& p) {
  unsigned n = 0;
  for_each_mon_capable(
      p, [&n](const Resource& r) { n = n == 0 ? r.mon.num_rmids : std::min(n, r.mon.num_rmids); });
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

  // ---- Monitoring ids. An RMID index numbers a (CLOSID, RMID) pair among
  // the num_rmid_idx(info()) monitoring ids fs/ allocates (the kernel's
  // resctrl_arch_rmid_idx_encode/decode). Unless
  // info().rmid_depends_on_closid, the index is the RMID and the CLOSID
  // plays no part (decode gives kAnyClosid).
  static constexpr uint32_t kAnyClosid = UINT32_MAX;
  virtual uint32_t rmid_idx_encode(uint32_t closid, uint32_t rmid) const {
    (void)closid;
    return rmid;
  }
  virtual std::pair<uint32_t, uint32_t> rmid_idx_decode(uint32_t idx) const {
    return {kAnyClosid, idx};
  }

  // An architecture's state for a run of counter reads of one event (the
  // kernel's arch_mon_ctx: e.g. a hardware monitor allocated for the read).
  // fs/ allocates one per run (a file read, a limbo pass) with
  // mon_ctx_alloc and passes it to every read_counter of the run; null
  // means the architecture needs none.
  class MonCtx {
   public:
    virtual ~MonCtx() = default;
  };
  virtual std::unique_ptr<MonCtx> mon_ctx_alloc(ResourceId rid, EventId ev) {
    (void)rid;
    (void)ev;
    return nullptr;
  }

  // Reads event `ev` of (closid, rmid) on monitoring domain `domain_id` of
  // monitor resource `rid` (the kernel's resctrl_arch_rmid_read). `closid`
  // is the CLOSID of the group the RMID belongs to (a monitor group's
  // parent's). For bandwidth events the value folds counter wrap-around
  // into a running total. Under SNC `rmid` is the logical RMID and
  // `domain_id` a node; hw/ reads that node's physical RMID. With counter
  // assignment enabled `cntr_id` names the assigned counter to read instead
  // of the RMID. Error/Unavailable come from the hardware's status.
  // For telemetry events (is_perf_pkg_event) the domain is a package and
  // the value the sum over that package's counter sets: kUnavailable when
  // none has valid data for the RMID yet, kError when the counter cannot be
  // read or the event is not enabled; nothing is reset when an RMID is
  // reused. Cost: two register accesses (telemetry: one read per counter
  // set of the package).
  virtual CounterValue read_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                                    EventId ev, MonCtx* ctx,
                                    std::optional<unsigned> cntr_id = std::nullopt) = 0;

  // Restarts the count of (domain, closid, rmid, ev) of `rid` at 0: the
  // hardware counter's value now becomes the baseline later reads count
  // from (the kernel's resctrl_arch_reset_rmid, done when an RMID is
  // allocated, so traffic between mkdir and the first read is counted).
  // Cost: two register accesses.
  virtual void reset_counter(ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                             EventId ev) = 0;
  // Forgets the running state of every RMID and bandwidth event of a
  // domain of `rid` whose hardware counters were cleared: they count from a
  // raw value of 0 (resctrl_arch_reset_rmid_all).
  virtual void reset_all_counters(ResourceId rid, int domain_id) = 0;

  // Event configuration (MonCaps::evt_cfg): the transaction mask of a
  // bandwidth event on a domain of `rid`. Writing a different value makes
  // the hardware clear every bandwidth counter of the domain (both events,
  // every RMID; the next read of each reports Unavailable), and every count
  // starts again from 0.
  virtual Result<void> set_event_config(ResourceId rid, int domain_id, EventId ev,
                                        uint32_t config) = 0;
  virtual uint32_t event_config(ResourceId rid, int domain_id, EventId ev) const = 0;

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

  // Counter assignment (MonCaps::cntr_assign): enables or disables counter
  // assignment mode on every domain of `rid` (the kernel's
  // resctrl_arch_mbm_cntr_assign_set).
  virtual Result<void> set_cntr_assign_enabled(ResourceId rid, bool enable) = 0;
  // Binds counter `cntr_id` of `domain_id` of `rid` to (closid, rmid, ev)
  // with transaction filter `evt_cfg`, or unbinds it (the kernel's
  // resctrl_arch_config_cntr). Resets the counter's count.
  virtual Result<void> config_cntr(ResourceId rid, int domain_id, unsigned cntr_id, uint32_t closid,
                                   uint32_t rmid, EventId ev, uint32_t evt_cfg, bool assign) = 0;

  // Running totals that outlive the daemon (ours: the kernel's live as long
  // as the machine). The daemon hands the Arch `region`, memory that stays
  // when the process dies (a shared mapping of a file it keeps), of
  // counter_state_bytes() bytes, before the filesystem mounts. With
  // `carry_over` the region holds the running totals a previous daemon on
  // this platform left and the Arch continues them: every later read goes
  // on from there, and counters_carried_over() says so, so that the
  // restore of the groups does not reset them. Without it the Arch writes
  // its own fresh state there. From then on every change of a running total
  // is in the region before the read that made it returns, so a daemon
  // killed at any instant leaves totals a successor can continue (never
  // behind what a reader saw). An Arch without running totals needs none
  // (0 bytes; never carried over).
  virtual size_t counter_state_bytes() const { return 0; }
  virtual void keep_counter_state(std::byte* region, bool carry_over) {
    (void)region;
    (void)carry_over;
  }
  virtual bool counters_carried_over() const { return false; }

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
  // hardware (on MPAM: what each CLOSID held before, as Linux's MPAM driver
  // restores a component's configuration), CDP as currently enabled, fresh
  // MBM state and the hardware's event configuration, then announced
  // through `events`. The CPU runs with
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
// Arch::online_cpu()/offline_cpu(), so under the caller's command and model
// locks.
//   - *_online: the domain has just been added to info() (its registers
//     already hold the defaults, its MBM state is fresh);
//   - *_offline: the domain's last CPU is leaving; the domain is still in
//     info() during the call and is removed right after it.
class ArchEvents {
 public:
  virtual ~ArchEvents() = default;
  virtual void ctrl_domain_online(ResourceId rid, int domain_id) = 0;
  virtual void ctrl_domain_offline(ResourceId rid, int domain_id) = 0;
  // Monitoring domains of monitor-capable resource `rid` (its
  // MonCaps::scope: an L3 cache or node, a package, ...).
  virtual void mon_domain_online(ResourceId rid, int domain_id) = 0;
  virtual void mon_domain_offline(ResourceId rid, int domain_id) = 0;
};

}  // namespace resctrlfs::hw

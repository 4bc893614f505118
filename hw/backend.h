// Defines what a process holds of the platform it runs: the Backend (an
// Arch plus what the daemon drives besides, built by hw/platform_factory.h)
// and SimControl, the knobs of a simulated machine that the daemon's control
// socket and the tests drive (clock, workloads, faults).
//
// daemon/ and tests include this; fs/ never does.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "hw/arch.h"

namespace resctrlfs::hw {

// A synthetic workload: what a thread (or everything on a CPU) does to the
// cache and memory. Used by the simulator to produce counts.
struct Workload {
  uint64_t cache_footprint_bytes = 0;  // working set competing for L3
  double bandwidth_mbps = 0;           // memory bandwidth demand (MB/s = 1e6 B/s)
  double local_fraction = 1.0;         // share of traffic to local memory
  // Thread workloads only: the CPU the thread runs on. -1: an unpinned
  // thread, spread evenly over the L3 domains (and their NUMA nodes) that
  // hold an online CPU of `allowed_cpus`.
  int cpu = -1;
  // An unpinned thread's affinity: the CPUs it may run on; empty: every CPU.
  std::vector<unsigned> allowed_cpus;
  // What the simulated LWP unit counts (ours, see hw/sim/lwp_unit.h):
  // instructions retired per second of simulated time (0: none, so LWP sees
  // only LWPINS/LWPVAL) and the share of them that are branches.
  double instructions_per_sec = 0;
  double branch_share = 0.2;
  // Share of the traffic that is writes (the rest is reads), 0..1;
  // bandwidth_mbps is reads plus writes. The simulator takes the writes as
  // non-temporal stores to memory (see hw/sim/machine.h). Last, so that
  // positional initialisers of the fields above keep their meaning.
  double write_fraction = 0.0;
  // Device (I/O RDT channel) workloads only: the NUMA node the device's DMA
  // targets, which under Sub-NUMA Clustering decides the node whose counters
  // see the traffic; -1: the first node of the channel's L3.
  int node = -1;
  // Demand of the footprint's part that does not fit in the cache (task
  // model, daemon/task_model.h): the simulator scales it by the share of the
  // footprint its CLOSID cannot keep in the L3 and adds it to bandwidth_mbps.
  double stream_mbps = 0;
};

// The bytes of one LWP event record, as lwp_drain() returns them.
inline constexpr size_t kLwpRecordSize = 32;

// The simulated LWP unit of one thread as the control interface shows it.
struct LwpThreadStatus {
  bool active = false;
  std::string generation = "shipped";  // the unit's generation: "shipped" or "proposal"
  uint64_t lwpcb_address = 0;          // what SLWPCB returns (LWP_CBADDR) while active
  std::string lwpcb;  // the LWPCB (SLWPCB's flush, or the last one loaded), encoded
  uint32_t buffer_size = 0, head = 0, tail = 0, flags = 0;
  uint64_t missed = 0;
  uint64_t interrupts = 0;
  size_t pending_records = 0;  // between tail and head
};

// LWPINS or LWPVAL executed `count` times by a simulated thread (ours):
// Data2 (the register operand), Data1 (r/m32) and Flags (the immediate's
// low 16 bits) of the records they write.
struct LwpInsert {
  bool value = false;  // LWPVAL (else LWPINS)
  uint64_t data2 = 0;
  uint32_t data1 = 0;
  uint16_t flags = 0;
  uint64_t count = 1;
};
// What an `lwp arm` request of the control socket asks of a simulated
// thread's LWP unit (ours): the interval of each event it profiles (absent:
// not profiled) and the LWPCB's fields.
struct LwpArm {
  std::optional<uint32_t> value, instructions, branches, dcache;
  uint32_t buffer_bytes = 64 * 1024;
  uint32_t threshold = 0;
  uint8_t min_latency = 0;
  uint8_t random = 0;
  bool clf = false, nbc = false, rdc = false, ram = false, oth = false;
};
struct LwpInsertResult {
  LwpThreadStatus status;  // after
  uint64_t written = 0;    // records written (stored or overwriting the last)
  uint64_t full = 0;       // LWPINS executions that returned CF = 1
};

// One register as the simulator holds it (for tests comparing hardware
// state with the tree, and `resctrlfsctl registers`): an MSR as read on
// `cpu` (the first online CPU of its domain for a shared one), or, with
// mmio_bytes != 0, an MMIO register at mmio_addr (msr and cpu 0). `group`
// names the feature it belongs to: "pqr", "monitoring", "l3_cat",
// "l2_cat", "mba", "smba", "cba", "bmec", "abmc", "snc", "pseudo_lock",
// "stlb", "io_rdt".
struct RegisterValue {
  unsigned cpu = 0;
  uint32_t msr = 0;
  uint64_t value = 0;
  const char* group = "";
  uint64_t mmio_addr = 0;
  unsigned mmio_bytes = 0;
};

class SimControl {
 public:
  virtual ~SimControl() = default;
  // Clock: real time (default) or manual. In manual mode time moves only
  // through advance_ms.
  virtual void set_manual_clock(bool manual) = 0;
  virtual bool manual_clock() const = 0;
  virtual void advance_ms(uint64_t ms) = 0;
  // Simulated milliseconds since the machine started.
  virtual uint64_t now_ms() const = 0;

  // Attaches (or with a zero workload, detaches) a workload to a thread id
  // or to a CPU. A thread workload counts against the thread's tags (see
  // ThreadTagger::set_thread_tags); a CPU workload against the CPU's PQR_ASSOC.
  virtual Result<void> attach_thread_workload(int tid, const Workload& w) = 0;
  virtual Result<void> attach_cpu_workload(unsigned cpu, const Workload& w) = 0;

  // The machine's counter state (ours): what a reader sees move (each
  // RMID's occupancy by cache way, both bandwidth counts and their wraps,
  // which RMIDs hardware counters track, the telemetry counts), kept in
  // `region` (counter_state_bytes() bytes that outlive the process: the
  // daemon's shared mapping, see hw/counter_store.h) so that a daemon that
  // takes the machine over after a crash finds the counters where they
  // were. With `carry_over` the region holds a previous daemon's counters
  // and the machine continues them; otherwise it writes its own there.
  // Every step of the model is in the region before the read that made it
  // returns. Not kept: declared workloads, the clock, ABMC counters, LWP.
  virtual size_t counter_state_bytes() const { return 0; }
  virtual void keep_counter_state(std::byte* region, bool carry_over) {
    (void)region;
    (void)carry_over;
  }

  // The task model (ours, daemon/task_model.h): what the real threads in
  // groups did in the last sample, as one workload per thread (pinned to the
  // CPU it last ran on, or spread when cpu is -1). Replaces the whole
  // previous set in one step: the time before is counted under the old
  // set. A thread counts under its tags as the kernel's context switch
  // would set PQR_ASSOC: a CLOSID or RMID of 0 (the default group) takes
  // that of its CPU's PQR_ASSOC. A thread with a declared workload
  // (attach_thread_workload) is counted by the declaration alone.
  virtual void set_task_activity(std::vector<std::pair<int, Workload>> activity) { (void)activity; }
  // The threads tagged (ThreadTagger::set_thread_tags) with a CLOSID or RMID
  // other than 0 and with no declared workload: what the task model samples.
  virtual std::vector<int> task_model_threads() const { return {}; }

  // I/O RDT (ours): attaches (or with a zero workload, detaches) a device
  // workload to I/O RDT channel `channel` (its id as the IRDT table numbers
  // it). EINVAL for a channel the machine does not have; ENODEV on a machine
  // without I/O RDT.
  virtual Result<void> attach_channel_workload(uint32_t channel, const Workload& w) {
    (void)channel;
    (void)w;
    return Error::make(ENODEV, "this machine has no I/O RDT channels");
  }

  // Fault injection: the next `count` MSR writes fail (as a #GP would), on
  // any CPU or only on `cpu`. Writes of the monitoring event select
  // (IA32_QM_EVTSEL, written by every counter read) are not counted, so
  // the once-a-second monitoring work never takes the fault.
  virtual void fail_next_writes(unsigned count, std::optional<unsigned> cpu) = 0;

  // AMD Lightweight Profiling of a simulated thread (ours; see
  // hw/sim/lwp_unit.h): `lwpcb` (encoded as hw/x86/lwp_format.h, proposal
  // layout, with the event ids of the machine's generation) is loaded as
  // LLWPCB would on the CPU the thread runs on, with the events and
  // interrupt its LWP_CFG enables (at boot: all that CPUID 8000_001Ch EDX
  // offers); the thread's workload then produces records. A machine whose
  // CPUID has no LWP refuses with EOPNOTSUPP. An empty `lwpcb` disarms (LLWPCB 0).
  // Drain takes the records between tail and head (at most `max`, 0: all)
  // in the 32-byte record format and advances the tail. Machines without
  // the unit refuse with EOPNOTSUPP.
  virtual Result<LwpThreadStatus> lwp_arm(int tid, const std::string& lwpcb) {
    return Error::make(EOPNOTSUPP, "no LWP unit");
  }
  // lwp_arm() with the LWPCB a thread would build for `arm`: the slots in
  // event-id order (the ids of the machine's generation), each counter
  // starting at its interval, the buffer's address nominal (the simulator
  // holds the ring itself). EOPNOTSUPP on a machine without LWP, EINVAL for
  // an event its generation lacks.
  virtual Result<LwpThreadStatus> lwp_arm_events(int tid, const LwpArm& arm) {
    (void)tid;
    (void)arm;
    return Error::make(EOPNOTSUPP, "no LWP unit");
  }
  // `after`, when given, receives the unit's status after the drain (the
  // unit is gone once the drain emptied a disarmed one).
  virtual Result<std::string> lwp_drain(int tid, size_t max, LwpThreadStatus* after = nullptr) {
    return Error::make(EOPNOTSUPP, "no LWP unit");
  }
  virtual Result<LwpThreadStatus> lwp_status(int tid) {
    return Error::make(EOPNOTSUPP, "no LWP unit");
  }
  // The thread executes LWPINS or LWPVAL (`op`) with its unit as it is:
  // ENOENT without a unit, EOPNOTSUPP in a generation without the
  // instruction (the proposal's).
  virtual Result<LwpInsertResult> lwp_insert(int tid, const LwpInsert& op) {
    (void)tid;
    (void)op;
    return Error::make(EOPNOTSUPP, "no LWP unit");
  }
  // A thread's unit and its ring are held from its arm until it is
  // disarmed with no records left to drain (at the disarm, or at the drain
  // that empties it), or until the thread exits (ThreadTagger's
  // thread_exited, or lwp_forget for an exit no event reported). The rings
  // held together are capped (LwpUsage::limit_bytes): an arm past the cap
  // is ENOMEM and changes nothing.
  struct LwpUsage {
    size_t units = 0;
    uint64_t bytes = 0;        // ring bytes held
    uint64_t limit_bytes = 0;  // the cap on `bytes`
  };
  virtual LwpUsage lwp_usage() { return {}; }
  // The threads holding a unit, and dropping one's unit.
  virtual std::vector<int> lwp_threads() { return {}; }
  virtual void lwp_forget(int tid) { (void)tid; }

  // Every RDT register the simulator holds (per CPU for PQR_ASSOC, one CPU
  // per domain for domain registers). Offline CPUs and domains without an
  // online CPU are left out.
  virtual std::vector<RegisterValue> dump_registers() const = 0;
  // dump_registers() and every other register the machine has (the
  // monitoring event select, MBA_CFG, IA32_L3_IO_QOS_CFG and the I/O RDT
  // MMIO tag registers, STLB_QOS_INFO, IA32_CORE_CAPABILITIES, the last
  // ABMC configuration), each with its group: what `resctrlfsctl registers`
  // shows by feature. Not in dump_registers() because some change without
  // a control changing (the event select at every counter read).
  virtual std::vector<RegisterValue> dump_all_registers() const { return dump_registers(); }

  // CPU hotplug of the machine itself: powers logical CPU `cpu` down or up.
  // An offline CPU's MSRs cannot be accessed (EIO, as the MSR driver fails
  // for an offline CPU). A CPU powering up has PQR_ASSOC 0/0. When the last
  // CPU of an L3 (or L2) domain goes down the domain loses its register
  // state like a powered-down package: when a CPU of it comes back its
  // masks, bandwidth limits, QOS_CFG, BMEC and ABMC registers hold their
  // power-on values and its occupancy and MBM counts start from zero. A
  // CPU workload on a CPU going down is dropped. This is only the hardware:
  // the caller tells the OS side (Arch::offline_cpu before powering down,
  // Arch::online_cpu after powering up). EINVAL for a CPU the platform does
  // not have; a no-op when the CPU is already in that state.
  virtual Result<void> set_cpu_online(unsigned cpu, bool online) = 0;
  virtual bool cpu_online(unsigned cpu) const = 0;
};

// The CPUs of a platform as /proc/cpuinfo shows them (and `resctrlfsctl
// status` reports them): what the architecture's code decoded.
struct CpuDescription {
  std::string vendor;  // cpuinfo's vendor_id
  unsigned family = 0, model = 0;
  // The resctrl-related flags cpuinfo shows, in the kernel's order.
  std::vector<std::string> flags;
  // cpuinfo's "cache size" is the L2's rather than the last level's.
  bool cache_size_from_l2 = false;
  // A simulated platform's cache sizes, one cache of each level (sysfs
  // cache/index{2,3}/size), 0 where none; a real machine's are in its sysfs.
  uint64_t l2_bytes = 0, l3_bytes = 0;
};

// What a simulated platform whose /proc/cpuinfo is not x86-shaped shows
// outside resctrl, for the sandbox: its whole /proc/cpuinfo (for CPUs
// `cpus`, in that architecture's format) and its cache sizes (sysfs
// cache/index*/size).
struct PlatformFacts {
  std::string vendor;  // the CPU's maker as /proc/cpuinfo implies it ("ARM")
  std::function<std::string(const std::vector<unsigned>& cpus)> cpuinfo;
  uint64_t l2_size_bytes = 0, l3_size_bytes = 0;
};

struct Backend {
  std::unique_ptr<Arch> arch;
  SimControl* sim = nullptr;  // owned by arch's machine; null for the real backend
  // The CPUs of the machine the Arch drives (an x86-shaped description).
  std::optional<CpuDescription> cpu;
  // Set instead of cpu for a platform of another architecture (Arm MPAM).
  std::optional<PlatformFacts> facts;
  std::string platform_name;
  // Internals kept alive with the Arch (machine, devices).
  std::shared_ptr<void> keepalive;
  // The real backend: requests sent to its broker and the register
  // operations they carried, since start (empty for the simulated one).
  std::function<std::pair<uint64_t, uint64_t>()> broker_counts;
};

// Names of the built-in simulated platform profiles of the x86 simulator:
// intel-2s, intel-l2, intel-cmt, amd-2s, intel-snc, intel-aet,
// intel-gnr-io, host. Every architecture's: platform_names()
// (hw/platform_factory.h).
std::vector<std::string> builtin_platforms();

// Checks a list for the kernel's rdt= boot parameter (`--rdt`): EINVAL
// naming an unknown feature, with a suggestion and the valid names.
Result<void> check_rdt_list(std::string_view rdt);

// Builds the x86 simulator's backend from a built-in profile name or a JSON
// file. `rdt` is the kernel's rdt= boot parameter (e.g. "l3cat,!mba"), added
// to the profile's own "rdt" entries. make_platform() (hw/platform_factory.h)
// picks the architecture's builder; tests call this one directly.
Result<Backend> make_sim_backend(const std::string& platform, const std::string& rdt = "");

}  // namespace resctrlfs::hw

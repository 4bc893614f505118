// Defines the hardware half of `resctrlfsd --self-check`: a read-only look
// at the machine the real backend would drive. The architecture's code
// (hw/real/probe.cc) reads what every online CPU enumerates, reads
// (never writes) the resctrl registers through the broker, and builds a
// model: an Arch decoded from the same enumeration over an in-memory
// register file, so that the caller can mount a private resctrl tree on it
// and see what resctrlfs would show and program, without touching the
// machine. hw/platform_factory.h builds it (probe_platform()).
//
// daemon/ includes this; fs/ never does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "hw/arch.h"

namespace resctrlfs::hw {

// One control register of one CLOSID: where it lives, what the model
// (resctrlfs) holds there and what the machine holds.
struct ProbeRegister {
  std::string what;  // "L3 domain 0 CLOSID 3 (CODE)"
  unsigned cpu = 0;
  uint32_t address = 0;  // the register's number on `cpu`
  uint64_t model = 0;
  std::optional<uint64_t> machine;  // empty: not read (refused or failed)
};

// One Intel PMT telemetry aggregator the probe found (PERF_PKG), or one it
// left out (then `served` is false and `note` says why).
struct ProbeTelemetry {
  std::string what;     // "telem3: GUID 0x26696143, package 0"
  bool served = false;  // a counter of it was read through the broker
  std::string note;     // why not, when not served
};

class HwProbe {
 public:
  virtual ~HwProbe() = default;
  // "GenuineIntel family 6 model 0x6a stepping 6".
  virtual std::string cpu_name() const = 0;
  // The resctrl-related flags the CPUs enumerate, as /proc/cpuinfo names them.
  virtual std::vector<std::string> cpu_flags() const = 0;
  // Online CPUs whose enumeration was read.
  virtual unsigned cpus_checked() const = 0;
  // One line per enumeration leaf on which a CPU differs from the first
  // online CPU.
  virtual std::vector<std::string> cpu_differences() const = 0;
  // Null when the CPU has no RDT/PQoS (or rdt= turned it all off); why in
  // model_error().
  virtual Arch* model() = 0;
  virtual std::string model_error() const = 0;
  // Empty when the registers were read, else why not (no broker, refused).
  virtual std::string machine_error() const = 0;
  // Register reads that failed (a register the broker refused or the CPU
  // did not implement), one line each.
  virtual std::vector<std::string> unread_registers() const = 0;
  // The machine's per-RMID telemetry aggregators (sysfs intel_pmt), each
  // with whether the broker served a read of it; and those left out.
  virtual std::vector<ProbeTelemetry> telemetry() const = 0;
  // How many register reads were sent to the broker, and writes (always 0).
  virtual std::pair<uint64_t, uint64_t> machine_ops() const = 0;
  // The control registers of `model_closid` in the model next to those of
  // `machine_closid` on the machine, every resource and control domain
  // (both halves under CDP, as the model has CDP on).
  virtual std::vector<ProbeRegister> closid_registers(uint32_t model_closid,
                                                      uint32_t machine_closid) const = 0;
  // The CLOSIDs (below the hardware's count) whose registers on the machine
  // equal `model_closid`'s in the model.
  virtual std::vector<uint32_t> machine_closids_like(uint32_t model_closid) const = 0;
  // The CLOSIDs that may hold them: every register that was read equals the
  // model's, but some could not be read (so neither like nor unlike).
  virtual std::vector<uint32_t> machine_closids_unsure(uint32_t model_closid) const = 0;
  // CDP as the machine's configuration registers have it (empty: not read).
  virtual std::optional<bool> machine_cdp(ResourceId rid) const = 0;
  // Per online CPU, the CLOSID its association register holds on the
  // machine (CPUs not read left out).
  virtual std::map<unsigned, uint32_t> machine_cpu_closids() const = 0;
  // Per online CPU, the RMID its association register holds on the
  // machine (CPUs not read left out).
  virtual std::map<unsigned, uint32_t> machine_cpu_rmids() const = 0;
};

// Probes the machine under `hw_root` ("/" on a real one) through the broker
// at `broker_socket`, with the kernel's rdt= options `rdt` and the mount
// options' CDP (`cdp_l3`, `cdp_l2`) applied to the model. Never fails: what
// cannot be checked is said in the probe. Only fails (with the reason) when
// the topology cannot be read at all.
Result<std::unique_ptr<HwProbe>> probe_hardware(const std::string& broker_socket,
                                                const std::string& rdt, const std::string& hw_root);

}  // namespace resctrlfs::hw

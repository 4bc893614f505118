// libFuzzer target: platform profiles (--platform FILE.json, hw/sim/
// profile.h). Any text must parse to a profile or to an error, never throw
// or crash. A profile that parses must describe a machine the simulator and
// the x86 Arch can be built on (or refuse with an error); that step runs for
// machines of up to 64 CPUs, so that one input stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resctrlfs::hw;
  const std::string in(reinterpret_cast<const char*>(data), size);
  auto p = sim::parse_profile(in, "fuzz");
  if (!p.ok()) {
    if (p.error().message.empty()) std::abort();  // refused without a reason
    return 0;
  }
  if (p->cpus.size() != p->nr_cpus) std::abort();
  if (p->nr_cpus > 64) return 0;
  auto machine = std::make_shared<sim::SimMachine>(std::move(p.value()));
  (void)x86::X86Arch::create(machine->os_info(), machine->limits(), machine, machine,
                             machine->profile().telemetry.empty() ? nullptr : machine,
                             machine->profile().rdt);
  return 0;
}

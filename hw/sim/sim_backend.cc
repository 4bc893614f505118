// Implements make_sim_backend() and builtin_platforms(): a simulated machine
// from a platform profile, with the x86 Arch programming it.
#include <memory>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"

namespace resctrlfs::hw {

std::vector<std::string> builtin_platforms() { return sim::builtin_profile_names(); }

Result<void> check_rdt_list(std::string_view rdt) { return x86::RdtOptions::check(rdt); }

Result<Backend> make_sim_backend(const std::string& platform, const std::string& rdt) {
  RESCTRLFS_ASSIGN_OR_RETURN(sim::Profile profile, sim::load_profile(platform));
  x86::RdtOptions extra = x86::RdtOptions::parse(rdt);
  for (auto& f : extra.force_on) profile.rdt.force_on.push_back(std::move(f));
  for (auto& f : extra.force_off) profile.rdt.force_off.push_back(std::move(f));
  auto machine = std::make_shared<sim::SimMachine>(std::move(profile));
  // CPUID is per logical processor (cpuid_per_cpu): the RDT leaves must agree.
  RESCTRLFS_RETURN_IF_ERROR(x86::check_rdt_cpuid_uniform(*machine, machine->profile().topology()));
  RESCTRLFS_ASSIGN_OR_RETURN(
      std::unique_ptr<x86::X86Arch> arch,
      x86::X86Arch::create(machine->os_info(), machine->limits(), machine, machine,
                           machine->profile().telemetry.empty() ? nullptr : machine,
                           machine->profile().rdt));
  // I/O RDT: the machine's own IRDT table and tagging registers.
  if (!machine->irdt_blob().empty()) {
    auto t = x86::parse_irdt(machine->irdt_blob(),
                             x86::IrdtParseOptions{machine->profile().io_rdt->wide_reg_bytes});
    if (t.ok()) (void)arch->attach_io_rdt(std::move(t).value(), machine);
  }
  Backend b;
  b.cpu = x86::cpu_description(arch->platform());
  b.cpu->l2_bytes = sim::cache_size_bytes(machine->profile(), 2);
  b.cpu->l3_bytes = sim::cache_size_bytes(machine->profile(), 3);
  b.arch = std::move(arch);
  b.sim = machine.get();
  b.platform_name = platform;
  b.keepalive = machine;
  return b;
}

}  // namespace resctrlfs::hw

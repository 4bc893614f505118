// Implements hw/platform_factory.h: the table of architectures and the
// backends, the one place that maps a program's choice of platform onto
// hw/<arch>/ code.
#include "hw/platform_factory.h"

#include <iterator>
#include <utility>

#include "hw/mpam/platforms.h"
#include "hw/real/dev_cpuid.h"
#include "hw/real/msr_backend.h"
#include "hw/sim/profile.h"
#include "hw/x86/platform.h"

namespace resctrlfs::hw {
namespace {

// One architecture: its simulated platforms and, where it has one, its
// real backend with what comes before it. A platform belongs to the first
// row that claims it; the last row claims every platform (the fallback:
// JSON profiles without an architecture of their own are x86 profiles). The
// real backend is the first row's that has one.
struct Architecture {
  const char* name;
  // The built-in simulated platforms.
  std::vector<std::string> (*builtin_platforms)();
  // Whether `platform` (a built-in name, NAME@host or a JSON profile's
  // path) is this architecture's.
  bool (*claims)(const std::string& platform);
  Result<Backend> (*make_sim)(const std::string& platform, const std::string& rdt);
  // The real machine; null, with the four after it: no real backend.
  Result<Backend> (*make_real)(const PlatformOptions& opts);
  Result<std::string> (*cpuinfo_flags)(const PlatformOptions& opts);
  Result<void> (*check_real)(std::string_view proc_mounts, std::string_view cpuinfo);
  Result<CpuDescription> (*real_cpu)(const PlatformOptions& opts);
  Result<std::unique_ptr<HwProbe>> (*probe)(const PlatformOptions& opts);
};

// x86: the simulator of hw/sim, the real machine through hw/real and the
// resctrl-msrd broker.
namespace x86_rows {
bool claims(const std::string&) { return true; }
Result<Backend> make_real(const PlatformOptions& opts) {
  return make_msr_backend(opts.broker_socket, opts.rdt, opts.hw_root);
}
Result<std::string> cpuinfo_flags(const PlatformOptions& opts) {
  return cpuinfo_flags_from_cpuid(opts.hw_root);
}
Result<CpuDescription> real_cpu(const PlatformOptions& opts) {
  RESCTRLFS_ASSIGN_OR_RETURN(x86::X86Platform info, x86_platform_from_cpuid(opts.hw_root));
  return x86::cpu_description(info);
}
Result<std::unique_ptr<HwProbe>> probe(const PlatformOptions& opts) {
  return probe_hardware(opts.broker_socket, opts.rdt, opts.hw_root);
}
}  // namespace x86_rows

// Arm MPAM: the simulated machines of hw/mpam; no real backend.
namespace mpam_rows {
bool claims(const std::string& platform) {
  std::string base = platform;
  if (base.ends_with(sim::kFitToHostSuffix))
    base.resize(base.size() - std::string_view(sim::kFitToHostSuffix).size());
  for (const std::string& n : mpam::mpam_platform_names())
    if (n == base) return true;
  return false;
}
Result<Backend> make_sim(const std::string& platform, const std::string& rdt) {
  if (!rdt.empty())
    return Error::make(
        EINVAL, "--rdt is the x86 kernel's rdt= option; " + platform + " is an Arm MPAM platform");
  return *mpam::make_mpam_backend(platform);
}
}  // namespace mpam_rows

// The architectures, most specific first (a new one goes above x86).
const Architecture kArchitectures[] = {
    {"mpam", mpam::mpam_platform_names, mpam_rows::claims, mpam_rows::make_sim, nullptr, nullptr,
     nullptr, nullptr, nullptr},
    {"x86", builtin_platforms, x86_rows::claims, make_sim_backend, x86_rows::make_real,
     x86_rows::cpuinfo_flags, check_msr_preconditions, x86_rows::real_cpu, x86_rows::probe},
};

const Architecture& architecture_of(const std::string& platform) {
  for (const Architecture& a : kArchitectures)
    if (a.claims(platform)) return a;
  return kArchitectures[std::size(kArchitectures) - 1];
}

// The architecture of the real backend, or an error naming the lack.
Result<const Architecture*> real_architecture() {
  for (const Architecture& a : kArchitectures)
    if (a.make_real != nullptr) return &a;
  return Error::make(ENODEV, "no architecture has a real backend");
}

}  // namespace

std::string_view backend_name(BackendKind kind) {
  return kind == BackendKind::kReal ? "msr" : "sim";
}

std::optional<BackendKind> backend_named(std::string_view name) {
  if (name == "sim") return BackendKind::kSim;
  if (name == "msr") return BackendKind::kReal;
  return std::nullopt;
}

std::vector<std::string> backend_names() { return {"sim", "msr"}; }

std::vector<std::string> platform_names() {
  std::vector<std::string> out;
  for (const Architecture& a : kArchitectures)
    for (std::string& n : a.builtin_platforms()) out.push_back(std::move(n));
  return out;
}

std::string fitted_to_host(const std::string& platform) { return platform + sim::kFitToHostSuffix; }

Result<Backend> make_platform(const PlatformOptions& opts) {
  if (opts.backend == BackendKind::kReal) {
    RESCTRLFS_ASSIGN_OR_RETURN(const Architecture* a, real_architecture());
    return a->make_real(opts);
  }
  return architecture_of(opts.platform).make_sim(opts.platform, opts.rdt);
}

Result<std::string> cpuinfo_flags_from_hardware(const PlatformOptions& opts) {
  RESCTRLFS_ASSIGN_OR_RETURN(const Architecture* a, real_architecture());
  return a->cpuinfo_flags(opts);
}

Result<void> check_real_preconditions(std::string_view proc_mounts, std::string_view cpuinfo) {
  RESCTRLFS_ASSIGN_OR_RETURN(const Architecture* a, real_architecture());
  return a->check_real(proc_mounts, cpuinfo);
}

Result<CpuDescription> real_cpu_description(const PlatformOptions& opts) {
  RESCTRLFS_ASSIGN_OR_RETURN(const Architecture* a, real_architecture());
  return a->real_cpu(opts);
}

Result<std::unique_ptr<HwProbe>> probe_platform(const PlatformOptions& opts) {
  RESCTRLFS_ASSIGN_OR_RETURN(const Architecture* a, real_architecture());
  return a->probe(opts);
}

std::vector<RegisterField> register_place(const RegisterValue& r) {
  if (r.mmio_bytes != 0) return {{"addr", r.mmio_addr, true}, {"bytes", r.mmio_bytes, false}};
  return {{"cpu", r.cpu, false}, {"msr", r.msr, true}};
}

}  // namespace resctrlfs::hw

// Implements the built-in MPAM platforms and make_mpam_backend().
//
// Core and cache counts are the parts' published ones; the MPAM ranges
// (PARTID_MAX, PMG_MAX, CPBM_WD, BWA_WD, CSU monitors) are ours, as no
// vendor publishes them: plausible values that exercise what Linux's
// driver derives from them.
#include "hw/mpam/platforms.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <set>
#include <utility>

#include "hw/host_topology.h"
#include "hw/mpam/arch_mpam.h"

namespace resctrlfs::hw::mpam {

namespace {

constexpr const char* kHostSuffix = "@host";

// `sockets` x `cores` cores, no SMT, a private L2 per core and one L3 (or
// system-level cache) per socket, one NUMA node per socket.
CpuTopology sockets_of(unsigned sockets, unsigned cores, uint64_t l2, uint64_t l3) {
  CpuTopology t;
  t.l2_size_bytes = l2;
  t.l3_size_bytes = l3;
  for (unsigned s = 0; s < sockets; ++s)
    for (unsigned c = 0; c < cores; ++c) {
      const int cpu = static_cast<int>(s * cores + c);
      t.cpus.push_back(CpuPlace{static_cast<int>(s), static_cast<int>(c), cpu, static_cast<int>(s),
                                static_cast<int>(s)});
    }
  return t;
}

// NVIDIA Grace CPU Superchip: two Grace dies of 72 Neoverse V2 cores, 1 MB
// of L2 per core and 114 MB of L3 per die. MPAM partitions both caches;
// the L3 also limits bandwidth and has CSU monitors.
MpamPlatform grace_2s() {
  MpamPlatform p;
  p.name = "grace-2s";
  p.description = "NVIDIA Grace CPU Superchip: 2 x 72 Neoverse V2, L2 and L3 MPAM";
  p.implementer = 0x41;
  p.part = 0xd4f;
  p.variant = 0x0;
  p.revision = 0;
  p.features =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
      "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca "
      "pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 "
      "i8mm bf16 dgh bti";
  p.topology = sockets_of(2, 72, 1ULL << 20, 114ULL << 20);
  p.l3_msc = MscParams{63, 1, 16, 4, true, 16};
  p.l2_msc = MscParams{63, 1, 8, 0, false, 0};
  return p;
}

// Ampere AmpereOne A192-32X, two sockets: 192 cores each, 2 MB of L2 per
// core and a 64 MB system-level cache per socket (the L3 as Linux sees it).
// MPAM on the system-level cache only: portions, bandwidth, CSU monitors.
MpamPlatform ampereone_2s() {
  MpamPlatform p;
  p.name = "ampereone-2s";
  p.description = "Ampere AmpereOne A192-32X, 2 sockets: 2 x 192 cores, L3 (SLC) MPAM";
  p.implementer = 0xc0;
  p.part = 0xac3;
  p.variant = 0x0;
  p.revision = 0;
  p.features =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
      "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg "
      "dcpodp flagm2 frint i8mm bf16 rng bti ecv";
  p.topology = sockets_of(2, 192, 2ULL << 20, 64ULL << 20);
  p.l3_msc = MscParams{31, 3, 16, 3, true, 8};
  return p;
}

struct Builtin {
  const char* name;
  MpamPlatform (*make)();
};
constexpr Builtin kBuiltins[] = {{"grace-2s", grace_2s}, {"ampereone-2s", ampereone_2s}};

unsigned host_online_cpus() {
  auto t = read_sysfs_cpu_tree("/sys/devices/system/cpu");
  if (t.ok() && !t->online.empty()) return static_cast<unsigned>(t->online.size());
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

}  // namespace

std::vector<std::string> mpam_platform_names() {
  std::vector<std::string> out;
  for (const Builtin& b : kBuiltins) out.push_back(b.name);
  return out;
}

Result<void> fit_platform(MpamPlatform& p, unsigned n) {
  std::set<int> l3s;
  for (const CpuPlace& c : p.topology.cpus) l3s.insert(c.l3);
  if (n < l3s.size())
    return Error::make(ENODEV, p.name + " needs at least " + std::to_string(l3s.size()) +
                                   " CPUs on this machine (one per L3); it has " +
                                   std::to_string(n));
  const std::vector<CpuPlace> old = p.topology.cpus;
  p.topology.cpus.clear();
  for (unsigned i = 0; i < n; ++i) p.topology.cpus.push_back(old[i * old.size() / n]);
  // With more CPUs than the platform, extra CPUs share their model's L2.
  return Ok();
}

std::optional<Result<MpamPlatform>> mpam_platform(const std::string& name,
                                                  std::optional<unsigned> host_cpus) {
  std::string base = name;
  const bool fit = base.size() > 5 && base.ends_with(kHostSuffix);
  if (fit) base.resize(base.size() - 5);
  for (const Builtin& b : kBuiltins) {
    if (base != b.name) continue;
    MpamPlatform p = b.make();
    if (fit) {
      p.name = name;
      if (Result<void> r = fit_platform(p, host_cpus.value_or(host_online_cpus())); !r.ok())
        return Result<MpamPlatform>(r.error());
    }
    return Result<MpamPlatform>(std::move(p));
  }
  return std::nullopt;
}

std::optional<Result<Backend>> make_mpam_backend(const std::string& name) {
  auto plat = mpam_platform(name);
  if (!plat) return std::nullopt;
  if (!plat->ok()) return Result<Backend>(plat->error());
  auto machine = std::make_shared<MpamMachine>(std::move(*plat).value());
  auto arch = MpamArch::create(*machine, *machine, machine->platform().topology);
  if (!arch.ok()) return Result<Backend>(arch.error());
  Backend b;
  const MpamPlatform& mp = machine->platform();
  PlatformFacts facts;
  facts.vendor = mp.implementer == 0x41 ? "ARM" : mp.implementer == 0xc0 ? "Ampere" : "";
  facts.cpuinfo = [machine](const std::vector<unsigned>& cpus) {
    return arm64_cpuinfo(machine->platform(), cpus);
  };
  facts.l2_size_bytes = mp.topology.l2_size_bytes;
  facts.l3_size_bytes = mp.topology.l3_size_bytes;
  b.facts = std::move(facts);
  b.arch = std::move(arch).value();
  b.sim = machine.get();
  b.platform_name = name;
  b.keepalive = machine;
  return Result<Backend>(std::move(b));
}

std::string arm64_cpuinfo(const MpamPlatform& p, const std::vector<unsigned>& cpus) {
  std::string out;
  char buf[256];
  for (unsigned cpu : cpus) {
    std::snprintf(buf, sizeof buf, "processor\t: %u\nBogoMIPS\t: 2000.00\n", cpu);
    out += buf;
    out += "Features\t: " + p.features + "\n";
    std::snprintf(buf, sizeof buf,
                  "CPU implementer\t: 0x%02x\nCPU architecture: 8\nCPU variant\t: 0x%x\n"
                  "CPU part\t: 0x%03x\nCPU revision\t: %u\n\n",
                  p.implementer, p.variant, p.part, p.revision);
    out += buf;
  }
  return out;
}

}  // namespace resctrlfs::hw::mpam

// Implements make_msr_backend(): the x86 Arch over real hardware, CPUID from
// /dev/cpu/N/cpuid, MSRs (and the I/O RDT registers and Intel PMT telemetry
// counters) through the resctrl-msrd broker.
#include "hw/real/msr_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "hw/broker/client.h"
#include "hw/real/dev_cpuid.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"
#include "hw/x86/sysfs_topology.h"

namespace resctrlfs::hw {

namespace real {

namespace {

bool any_resource(const PlatformInfo& info) {
  bool any = info.res(ResourceId::L3).mon.capable;
  for (const auto& r : info.resources) any = any || r.alloc_capable;
  return any;
}

}  // namespace

Result<Backend> make_msr_backend_with(const CpuidSource& cpuid, const x86::Topology& topo,
                                      const std::string& broker_socket, const x86::RdtOptions& rdt,
                                      std::vector<x86::PmtAggregator> pmt) {
  RESCTRLFS_RETURN_IF_ERROR(x86::check_rdt_cpuid_uniform(cpuid, topo));
  x86::X86Platform info = x86::decode_platform(cpuid, topo, nullptr, rdt);
  if (!any_resource(info)) {
    if (any_resource(x86::decode_platform(cpuid, topo, nullptr, x86::RdtOptions::all()))) {
      return Error::make(ENODEV, "the rdt= options and Linux's quirks for this CPU (" +
                                     info.vendor + " family " + std::to_string(info.family) +
                                     " model " + std::to_string(info.model) +
                                     ") turn every RDT/PQoS feature off");
    }
    return Error::make(ENODEV, "this CPU (" + info.vendor +
                                   ") enumerates no RDT/PQoS resource in CPUID (leaves 0x7, "
                                   "0xF, 0x10, 0x80000020); use the simulated platform instead");
  }
  unsigned first = topo.online.first();
  x86::HwLimits limits = x86::decode_limits(cpuid, first < topo.nr_cpus ? first : 0);
  auto dev = std::make_shared<broker::BrokerMsrDevice>(broker_socket);
  RESCTRLFS_RETURN_IF_ERROR(dev->client().connect());
  // One read the broker's policy always allows: a broker that refuses this
  // process (another uid than its --allow-uid) closes the connection, which
  // would otherwise surface only as "Failed to write hardware register".
  const unsigned probe_cpu = first < topo.nr_cpus ? first : 0;
  auto probe = dev->client().transact(
      {broker::Op{probe_cpu, x86::IA32_PQR_ASSOC, 0, broker::OpKind::kRead}});
  if (!probe.ok()) {
    return Error::make(EACCES,
                       "the MSR broker (resctrl-msrd) at " + broker_socket +
                           " did not serve this process (uid " + std::to_string(getuid()) +
                           "): " + probe.error().message +
                           "; it serves only the uid given by its --allow-uid (see its log)");
  }
  // STLB QoS is enumerated in registers (the broker allows the reads only
  // where it found STLB QoS itself).
  x86::decode_stlb(info, cpuid, *dev);
  // Intel telemetry (PERF_PKG): the aggregators' counters through the broker.
  std::shared_ptr<PmtTelemetryDevice> telemetry;
  if (!pmt.empty()) telemetry = std::make_shared<broker::BrokerPmtDevice>(dev, std::move(pmt));
  RESCTRLFS_ASSIGN_OR_RETURN(
      std::unique_ptr<x86::X86Arch> arch,
      x86::X86Arch::create(std::move(info), limits, dev, nullptr, std::move(telemetry), rdt));
  Backend b;
  b.x86 = &arch->platform();
  b.arch = std::move(arch);
  b.platform_name = "real";
  b.keepalive = dev;
  b.broker_counts = [d = dev.get()] {
    return std::make_pair(d->client().round_trips(), d->client().ops_sent());
  };
  return b;
}

}  // namespace real

Result<Backend> make_msr_backend(const std::string& broker_socket, const std::string& rdt,
                                 const std::string& hw_root) {
  const std::string root = hw_root == "/" ? "" : hw_root;
  RESCTRLFS_ASSIGN_OR_RETURN(x86::Topology topo,
                             x86::read_sysfs_topology(root + "/sys/devices/system/cpu"));
  real::DevCpuidSource cpuid(root + "/dev/cpu", /*instruction_fallback=*/root.empty());
  // The telemetry aggregators' GUID, size and device are world-readable:
  // found here; only their counters need the broker.
  std::vector<x86::PmtAggregator> pmt = x86::read_pmt_aggregators(
      root, topo,
      [](const std::string& line) { std::fprintf(stderr, "resctrlfsd: %s\n", line.c_str()); });
  RESCTRLFS_ASSIGN_OR_RETURN(
      Backend b, real::make_msr_backend_with(cpuid, topo, broker_socket,
                                             x86::RdtOptions::parse(rdt), std::move(pmt)));
  // I/O RDT: the firmware's IRDT table, its registers written through the
  // broker (which serves exactly those). Without a table, or with one the
  // parser refuses (the broker logs why), the Arch lists no channels.
  std::ifstream f(root + "/sys/firmware/acpi/tables/IRDT", std::ios::binary);
  auto* arch = dynamic_cast<x86::X86Arch*>(b.arch.get());
  if (f && arch != nullptr) {
    std::vector<uint8_t> blob((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
    auto dev = std::static_pointer_cast<broker::BrokerMsrDevice>(b.keepalive);
    auto t8 = x86::parse_irdt(blob, x86::IrdtParseOptions{8});
    auto t4 = x86::parse_irdt(blob, x86::IrdtParseOptions{4});
    if (t8.ok() && t4.ok()) {
      // The width of a register whose RCS has REGW clear is not known from
      // the specification (8 bytes in the table's description, 4 in the
      // register chapter): the broker probed it on the machine (or was told),
      // and serves those registers only at that width. Ask it with a read of
      // register 0 of such a block: 8 bytes, else 4; neither served: no
      // channels (the broker's log says why).
      const auto b8 = t8->register_blocks(), b4 = t4->register_blocks();
      std::optional<x86::IrdtTable> table;
      auto clear = std::find_if(b8.begin(), b8.end(), [&](const x86::IrdtRegisterBlock& x) {
        return std::find(b4.begin(), b4.end(), x) == b4.end();
      });
      if (clear == b8.end() || dev->mmio_read(clear->base, 8).ok()) {
        table = std::move(t8).value();
      } else if (dev->mmio_read(clear->base, 4).ok()) {
        table = std::move(t4).value();
      } else {
        std::fprintf(stderr,
                     "resctrlfsd: I/O RDT: the broker serves no width for the registers whose "
                     "RCS has REGW clear (see its log): no channels\n");
      }
      if (table) (void)arch->attach_io_rdt(std::move(*table), dev);
    }
  }
  return b;
}

}  // namespace resctrlfs::hw

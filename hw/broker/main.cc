// resctrl-msrd: the privileged MSR broker. The only resctrlfs process that
// opens /dev/cpu/*/msr; it serves batches of RDT register reads and writes
// to the daemon over a Unix socket (see server.h). With an ACPI IRDT table
// (Intel I/O RDT) it also serves the channels' tagging registers through
// /dev/mem, and no other physical address. With the intel_pmt driver's
// per-RMID telemetry aggregators (/sys/class/intel_pmt/telem<N> of a known
// AET GUID) it serves reads of their counters, never writes.
//
// The same source, built with RESCTRL_MSRD_SIM as resctrl-msrd-sim (a test
// program, never installed), also takes --sim and serves a simulated machine
// instead; the shipped resctrl-msrd links no simulator.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>

#include "base/cli_help.h"
#include "base/version.h"
#include "hw/backend.h"
#include "hw/broker/dev_mem.h"
#include "hw/broker/dev_msr.h"
#include "hw/broker/dev_pmt.h"
#include "hw/broker/server.h"
#include "hw/real/dev_cpuid.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/pmt_sysfs.h"
#include "hw/x86/sysfs_topology.h"
#if RESCTRL_MSRD_SIM
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#endif

using namespace resctrlfs;
using namespace resctrlfs::hw;

namespace {

using Blocks = std::vector<x86::IrdtRegisterBlock>;

// The width of the registers of a block whose RCS has REGW clear, found on
// the machine: IO_PQR_*1 of a 4-byte layout is the upper half of register 0
// (reserved bits) in an 8-byte one. Writes a value there with a 4-byte
// access, reads it back and puts the old contents back: kept (4 bytes) or
// not (8). Empty when an access fails.
std::optional<unsigned> probe_width(MmioDevice& mem, uint64_t base) {
  auto old = mem.mmio_read(base + 4, 4);
  if (!old.ok()) return std::nullopt;
  const uint64_t val = *old == 1 ? 2 : 1;  // a CLOSID and an RMID every part has
  if (!mem.mmio_write(base + 4, 4, val).ok()) return std::nullopt;
  auto back = mem.mmio_read(base + 4, 4);
  (void)mem.mmio_write(base + 4, 4, *old);
  if (!back.ok()) return std::nullopt;
  return *back == val ? 4U : 8U;
}

// The IRDT register blocks MMIO may touch: none without a table (logged
// when the table is there but malformed). `wide`: the width of a register
// whose RCS has REGW clear (4 or 8), or 0 to probe it on the machine through
// `mem` (the specification gives both 8 and 4): with every such RCS that
// has two channels or more agreeing; without one, or when they disagree,
// those registers are not served (logged), the others are.
Blocks irdt_blocks(const std::string& path, unsigned wide, MmioDevice& mem,
                   const std::function<void(std::string)>& log) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::vector<uint8_t> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto t = x86::parse_irdt(blob, x86::IrdtParseOptions{wide == 0 ? 8 : wide});
  if (!t.ok()) {
    log(path + ": " + t.error().message + "; I/O RDT registers are not served");
    return {};
  }
  if (wide != 0) return t->register_blocks();
  auto t4 = x86::parse_irdt(blob, x86::IrdtParseOptions{4});
  const Blocks b8 = t->register_blocks();
  const Blocks b4 = t4.ok() ? t4->register_blocks() : b8;
  if (b8 == b4) return b8;  // every RCS has REGW set
  std::optional<unsigned> width;
  bool unsure = false;
  for (const auto& b : b4) {
    if (std::find(b8.begin(), b8.end(), b) != b8.end() || b.count < 2) continue;
    auto w = probe_width(mem, b.base);
    unsure = unsure || !w || (width && *width != *w);
    if (w) width = *w;
  }
  if (width && !unsure) {
    log("I/O RDT registers whose RCS has REGW clear are " + std::to_string(*width) +
        " bytes wide (probed)");
    return *width == 8 ? b8 : b4;
  }
  Blocks common;
  for (const auto& b : b8)
    if (std::find(b4.begin(), b4.end(), b) != b4.end()) common.push_back(b);
  log("the width of the I/O RDT registers whose RCS has REGW clear could not be probed (" +
      std::string(width ? "the probes disagree" : "no such RCS has two channels") +
      "): they are not served; give --irdt-wide-bytes 4 or 8");
  return common;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"resctrl-msrd: privileged MSR broker for resctrlfs"};
  resctrlfs::use_help_formatter(app);
  // resctrl-msrd.service's RuntimeDirectory (0700, root's) holds the socket;
  // resctrlfsd --broker defaults to the same path (kDefaultSocket).
  std::string socket_path = resctrlfs::hw::kDefaultBrokerSocket;
  long allow_uid = 0;
  std::string sim_platform;
  std::string dev_root = "/dev/cpu";
  app.set_version_flag("--version", std::string("resctrl-msrd ") + resctrlfs::kVersion);
  app.add_option("--socket", socket_path,
                 "Unix socket to listen on (its directory is created, mode 0700, if missing)")
      ->type_name("SOCKET")
      ->capture_default_str();
  app.add_option("--allow-uid", allow_uid, "the only uid allowed to connect (default 0)");
#if RESCTRL_MSRD_SIM
  app.add_option("--sim", sim_platform, "serve a simulated machine (profile name or JSON file)");
#endif
  std::string hw_root = "/";
  app.add_option("--dev-root", dev_root, "directory holding N/cpuid and N/msr");
  app.add_option("--hw-root", hw_root,
                 "read ROOT/dev/cpu and ROOT/sys/devices/system/cpu (tests: an emulation of the "
                 "CPU drivers); overrides --dev-root");
  std::string irdt_path;  // default below: the firmware's, but not for a simulated machine
  std::string mem_path = "/dev/mem";
  unsigned irdt_wide = 0;
  app.add_option("--irdt", irdt_path,
                 "ACPI IRDT table naming the I/O RDT registers MMIO may touch (under --hw-root)");
  app.add_option("--mem", mem_path, "physical memory file for those registers (under --hw-root)");
  app.add_option("--irdt-wide-bytes", irdt_wide,
                 "width of an I/O RDT register whose RCS has REGW clear (the specification "
                 "contradicts itself: 8 in the RCS table, 4 in the register chapter); 0, the "
                 "default: probe it on the machine")
      ->check(CLI::IsMember({0u, 4u, 8u}));
  CLI11_PARSE(app, argc, argv);
  if (irdt_path.empty() && sim_platform.empty()) irdt_path = "/sys/firmware/acpi/tables/IRDT";

  auto log = [](const std::string& line) {
    std::fprintf(stderr, "resctrl-msrd: %s\n", line.c_str());
    std::fflush(stderr);
  };

  std::shared_ptr<MsrDevice> msr;
  std::shared_ptr<MmioDevice> sim_mmio;
  std::shared_ptr<PmtTelemetryDevice> pmt;
  std::vector<x86::PmtAggregator> pmt_aggregators;
  std::unique_ptr<broker::Policy> policy;
  const std::string root = hw_root == "/" ? "" : hw_root;
  if (!root.empty()) dev_root = root + "/dev/cpu";
  // The machine's own registers are root's (the msr driver also wants
  // CAP_SYS_RAWIO): said first, not as the open or the socket's directory
  // failing later. A simulated machine or an emulated --hw-root needs none.
  if (sim_platform.empty() && dev_root == "/dev/cpu" && ::geteuid() != 0) {
    log("must run as root: it reads and writes the CPUs' registers through /dev/cpu/N/msr "
        "(which needs CAP_SYS_RAWIO). Run it with sudo, or start resctrl-msrd.service "
        "(systemctl start resctrl-msrd)");
    return 1;
  }
#if RESCTRL_MSRD_SIM
  if (!sim_platform.empty()) {
    auto profile = sim::load_profile(sim_platform);
    if (!profile.ok()) {
      log(profile.error().message);
      return 2;
    }
    auto machine = std::make_shared<sim::SimMachine>(std::move(profile).value());
    policy = std::make_unique<broker::Policy>(machine->info(), machine->limits());
    msr = machine;
    // A simulated machine with I/O RDT serves its own tagging registers.
    if (!machine->irdt_blob().empty()) {
      auto t = x86::parse_irdt(machine->irdt_blob(),
                               x86::IrdtParseOptions{machine->profile().io_rdt->wide_reg_bytes});
      if (t.ok()) {
        policy->set_mmio_blocks(t->register_blocks());
        sim_mmio = machine;
      }
    }
    // A simulated machine with telemetry serves its own aggregators, as
    // telem0, telem1, ... in its order.
    const auto regions = machine->pmt_regions();
    for (size_t i = 0; i < regions.size(); ++i)
      pmt_aggregators.push_back(x86::PmtAggregator{static_cast<unsigned>(i), regions[i], ""});
    if (!regions.empty()) pmt = machine;
  }
#endif
  if (!msr) {
    auto topo = x86::read_sysfs_topology(root + "/sys/devices/system/cpu");
    if (!topo.ok()) {
      log(topo.error().message);
      return 2;
    }
    real::DevCpuidSource cpuid(dev_root, /*instruction_fallback=*/root.empty());
    // The guard follows what the hardware implements, not a kernel policy
    // (rdt= options and model quirks are the daemon's business).
    x86::X86Platform info = x86::decode_platform(cpuid, *topo, nullptr, x86::RdtOptions::all());
    auto dev = std::make_shared<broker::DevMsrDevice>(dev_root);
    // STLB QoS is enumerated in registers, read here directly.
    x86::decode_stlb(info, cpuid, *dev);
    bool any = info.res(ResourceId::L3).mon.capable;
    for (const auto& r : info.resources) any = any || r.alloc_capable;
    if (!any) {
      log("this CPU enumerates no RDT/PQoS resource; nothing to serve");
      return 3;
    }
    unsigned first = topo->online.first();
    policy = std::make_unique<broker::Policy>(std::move(info), x86::decode_limits(cpuid, first));
    msr = std::move(dev);
    pmt_aggregators = x86::read_pmt_aggregators(root, *topo, log);
    if (!pmt_aggregators.empty()) {
      log("serving " + std::to_string(pmt_aggregators.size()) +
          " PMT telemetry aggregators (read only) from " + root + "/sys/class/intel_pmt");
      pmt = std::make_shared<broker::DevPmtDevice>(pmt_aggregators);
    }
  }
  policy->set_pmt(pmt_aggregators);

  std::shared_ptr<MmioDevice> mmio = sim_mmio;
  auto mem = std::make_shared<broker::DevMemDevice>(root + mem_path);
  if (auto blocks =
          irdt_path.empty() ? Blocks{} : irdt_blocks(root + irdt_path, irdt_wide, *mem, log);
      !blocks.empty()) {
    log("serving " + std::to_string(blocks.size()) + " I/O RDT register blocks through " + root +
        mem_path);
    policy->set_mmio_blocks(std::move(blocks));
    mmio = mem;
  }

  boost::asio::io_context io;
  broker::BrokerServer server(io, socket_path, static_cast<uid_t>(allow_uid), std::move(*policy),
                              msr, log, mmio, pmt);
  ::umask(0077);  // the socket is for the allowed uid; SO_PEERCRED is checked anyway
  // The socket's directory (the default's is /run/resctrl-msrd, which the
  // unit's RuntimeDirectory= makes): created, for the allowed uid only, when
  // the broker is started by hand. An existing directory is left as it is.
  if (const size_t slash = socket_path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = socket_path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) == 0 && allow_uid != 0)
      (void)::chown(dir.c_str(), static_cast<uid_t>(allow_uid), -1);
  }
  if (auto r = server.start(); !r.ok()) {
    log(r.error().message);
    return 1;
  }
  if (allow_uid != 0) (void)::chown(socket_path.c_str(), static_cast<uid_t>(allow_uid), -1);
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    server.stop();
    io.stop();
  });
  log("serving " +
      std::string(sim_platform.empty() ? "/dev/cpu/*/msr" : "simulated " + sim_platform) + " on " +
      socket_path + " for uid " + std::to_string(allow_uid));
  io.run();
  return 0;
}

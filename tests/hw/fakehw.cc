// resctrl-fakehw: a test tool that stands in for the kernel's CPU drivers so
// that the real-hardware path (resctrlfsd --backend msr -> resctrl-msrd ->
// /dev/cpu/N/msr) runs unchanged on a simulated machine.
//
// Under ROOT it lays out what the real path reads:
//   ROOT/sys/devices/system/cpu/{possible,online,cpuN/topology/...,
//        cpuN/cache/indexK/{level,type,id,size},cpuN/nodeM}   plain files
//   ROOT/dev/cpu/N/{cpuid,msr}                                 a FUSE mount
//   ROOT/dev/mem, ROOT/sys/firmware/acpi/tables/IRDT    with I/O RDT only
//   ROOT/sys/class/intel_pmt/telemN -> ROOT/sys/devices/pci.../intel_pmt/
//        telemN/{guid,size,offset,device,telem}      with telemetry only
//   ROOT/sys/devices/system/node/nodeM/cpulist           with telemetry only
// The device files behave like the kernel's cpuid and msr drivers: cpuid
// answers a 16-byte pread at offset leaf | subleaf << 32 with eax..edx; msr
// reads and writes 8 bytes at offset = register number, and fails with EIO
// where the instruction would raise #GP (the simulated machine's rules).
// On a platform with I/O RDT the IRDT file is the machine's ACPI table and
// mem stands in for /dev/mem: a pread or pwrite of 1, 2, 4 or 8 bytes at
// offset = physical address is one MMIO access of that width (the channels'
// tagging registers; EIO outside the register pages). All go to one
// SimMachine built from --platform. The FUSE mount is ROOT/dev.
// ROOT/irdt_wide_bytes (I/O RDT only) holds the profile's width of a
// register whose RCS has REGW clear, for the tests' resctrl-msrd
// --irdt-wide-bytes (the operator's knowledge; without it the broker probes).
// On a platform with telemetry (the profile's "telemetry" aggregators) each
// aggregator N is laid out as the intel_pmt class driver publishes it: a
// directory under a fake PCI device of its package (that device's
// numa_node is a node of the package: the profile's, or the package number
// when the profile has no nodes) with guid, size and offset as plain files,
// `device` linking to the auxiliary device above it, and `telem` a symlink
// to ROOT/dev/intel_pmt/telemN on the FUSE mount, where every pread reaches
// the simulated machine's aggregator (SimMachine::pmt_read64) as it
// happens, 8-byte words at their byte offsets.
//
// --control SOCK serves the simulated machine's knobs, one JSON object per
// line (the requests the daemon's control socket serves for the sim
// backend, since on this path the daemon has no simulated machine):
//   {"cmd":"clock","mode":"manual"|"real"}  {"cmd":"clock","advance_ms":N}
//   {"cmd":"workload","cpu":C,"footprint_bytes":B,"bandwidth_mbps":M,
//    "local_fraction":F[,"write_fraction":W]}
//   {"cmd":"workload","channel":ID,...}  a device workload on an I/O RDT
//                                channel (the same keys, without cpu)
//   {"cmd":"fault","fail_writes":N[,"cpu":C]}
//   {"cmd":"registers"}
//   {"cmd":"delay","us":N}       every MSR access takes N us more (a slow machine);
//                                setting 0 releases the accesses waiting
//   {"cmd":"counts"}             MSR reads/writes (and MMIO ones) served so
//                                far, and how many accesses "delay" holds back now
//   {"cmd":"fail_reads","msr":M[,"cpu":C]}  every read of register M (on CPU
//                                C, or on every CPU) fails with EIO from now
//                                on, as a register the CPU does not implement;
//                                {"cmd":"fail_reads","clear":true} ends it
//   {"cmd":"fail_pmt","fail":B}  every read of a telemetry aggregator's telem
//                                file fails with EIO while B is true
//   {"cmd":"write","cpu":C,"msr":M,"value":V}  writes a register behind the
//                                broker's back (another tool on the machine);
//                                not counted in "counts"
//   {"cmd":"cpu","cpu":C,"online":B}  CPU hotplug: C goes offline (its
//                                /dev/cpu/C with it) or comes back from reset,
//                                and sysfs's online list and cpuC/online say so
// ROOT/proc/cmdline holds the profile's rdt= boot options.
// Only the test suites use it; it is never installed.
#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"

using namespace resctrlfs;
using nlohmann::json;

namespace {

std::shared_ptr<hw::sim::SimMachine> g_machine;
// ROOT/sys/devices/system/cpu, rewritten by the "cpu" command.
std::filesystem::path g_sysfs_cpu;
std::atomic<uint64_t> g_delay_us{0};
std::atomic<uint64_t> g_reads{0}, g_writes{0}, g_cpuid{0}, g_mmio_reads{0}, g_mmio_writes{0},
    g_pmt_reads{0};
std::atomic<bool> g_fail_pmt{false};
// The simulated machine's telemetry aggregators (telemN = index N).
std::vector<hw::PmtRegion> g_pmt;
std::atomic<uint64_t> g_waiting{0};  // accesses held back by "delay" right now

// "fail_reads": (cpu or -1 for every CPU, register) whose reads fail.
std::mutex g_fail_mu;
std::set<std::pair<long, uint32_t>> g_fail_reads;

bool read_fails(unsigned cpu, uint32_t msr) {
  std::lock_guard lock(g_fail_mu);
  return g_fail_reads.count({-1L, msr}) != 0 || g_fail_reads.count({long{cpu}, msr}) != 0;
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A file a reader may read at any moment: never seen half-written.
void replace_text(const std::filesystem::path& p, const std::string& text) {
  const std::filesystem::path tmp = p.string() + ".new";
  write_text(tmp, text);
  std::filesystem::rename(tmp, p);
}

std::string cpulist(const std::vector<unsigned>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out + "\n";
}

// The sysfs view of the profile's topology, as read_sysfs_topology() reads it.
void write_sysfs(const std::filesystem::path& dir, const hw::sim::Profile& p) {
  const auto topo = p.topology();
  std::vector<unsigned> online;
  for (unsigned c = 0; c < topo.nr_cpus; ++c)
    if (topo.online.test(c)) online.push_back(c);
  std::vector<unsigned> possible;
  for (unsigned c = 0; c < topo.nr_cpus; ++c) possible.push_back(c);
  write_text(dir / "possible", cpulist(possible));
  write_text(dir / "online", cpulist(online));
  for (unsigned c : online) {
    const auto base = dir / ("cpu" + std::to_string(c));
    write_text(base / "topology/physical_package_id", std::to_string(topo.package[c]) + "\n");
    if (topo.node[c] >= 0)
      std::filesystem::create_directories(base / ("node" + std::to_string(topo.node[c])));
    int k = 0;
    auto cache = [&](int level, int id, uint64_t size) {
      const auto idx = base / "cache" / ("index" + std::to_string(k++));
      write_text(idx / "level", std::to_string(level) + "\n");
      write_text(idx / "type", "Unified\n");
      write_text(idx / "id", std::to_string(id) + "\n");
      write_text(idx / "size", std::to_string(size / 1024) + "K\n");
    };
    if (topo.l2_id[c] >= 0) cache(2, topo.l2_id[c], topo.l2_size_bytes);
    if (topo.l3_id[c] >= 0) cache(3, topo.l3_id[c], topo.l3_size_bytes);
  }
}

bool has_mem() { return !g_machine->irdt_blob().empty(); }

// The intel_pmt class driver's view of the machine's telemetry aggregators
// (see the top of this file), and the NUMA nodes' CPU lists that tie each
// one to its package. `dev` is the FUSE mount (ROOT/dev).
void write_pmt_sysfs(const std::filesystem::path& root, const std::filesystem::path& dev,
                     const hw::sim::Profile& p) {
  namespace fs = std::filesystem;
  const auto topo = p.topology();
  // Node -> CPUs, and a node for each package: the profile's nodes, or one
  // node per package (numbered as the package) when it has none.
  std::map<int, std::vector<unsigned>> node_cpus;
  std::map<int, int> package_node;
  bool nodes = false;
  for (unsigned c = 0; c < topo.nr_cpus; ++c) nodes = nodes || topo.node[c] >= 0;
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (!topo.online.test(c)) continue;
    const int node = nodes ? topo.node[c] : topo.package[c];
    if (node < 0) continue;
    node_cpus[node].push_back(c);
    package_node.emplace(topo.package[c], node);
  }
  for (const auto& [node, cpus] : node_cpus)
    write_text(root / "sys/devices/system/node" / ("node" + std::to_string(node)) / "cpulist",
               cpulist(cpus));
  for (size_t i = 0; i < g_pmt.size(); ++i) {
    const hw::PmtRegion& r = g_pmt[i];
    const std::string n = "telem" + std::to_string(i);
    char bus[8];
    std::snprintf(bus, sizeof(bus), "%02x", 0x10 + 0x10 * (r.package_id & 0xF));
    const fs::path pci = root / "sys/devices" / (std::string("pci0000:") + bus) /
                         (std::string("0000:") + bus + ":03.1");
    const auto node = package_node.find(r.package_id);
    write_text(pci / "numa_node",
               std::to_string(node == package_node.end() ? -1 : node->second) + "\n");
    const fs::path dir =
        pci / ("intel_vsec.telemetry." + std::to_string(r.package_id)) / "intel_pmt" / n;
    char guid[16];
    std::snprintf(guid, sizeof(guid), "0x%x\n", r.guid);
    write_text(dir / "guid", guid);
    write_text(dir / "size", std::to_string(r.size) + "\n");
    write_text(dir / "offset", "0\n");
    // A root laid out before (a restarted emulation) gets fresh links.
    for (const fs::path& l : {dir / "device", dir / "telem", root / "sys/class/intel_pmt" / n})
      fs::remove(l);
    fs::create_directory_symlink("../..", dir / "device");
    fs::create_symlink(fs::absolute(dev) / "intel_pmt" / n, dir / "telem");
    fs::create_directories(root / "sys/class/intel_pmt");
    fs::create_directory_symlink(fs::absolute(dir), root / "sys/class/intel_pmt" / n);
  }
}

// Paths: "/" (ROOT/dev), "/mem", "/cpu", "/cpu/N", "/cpu/N/cpuid", "/cpu/N/msr",
// "/intel_pmt", "/intel_pmt/telemN".
struct Parsed {
  int depth = 0;  // 0 cpu/ or intel_pmt/, 1 cpu dir, 2 file; -1 dev/
  unsigned cpu = 0;
  bool msr = false;
  bool ok = false;
  bool mem = false;
  bool pmt = false;  // intel_pmt/ (depth 0) or telemN (depth 2, `cpu` = N)
};

Parsed parse(const char* path) {
  Parsed p;
  std::string s(path);
  if (s == "/") return Parsed{-1, 0, false, true};
  if (s == "/mem") return Parsed{2, 0, false, has_mem(), true};
  if (s == "/intel_pmt") return Parsed{0, 0, false, !g_pmt.empty(), false, true};
  if (s.rfind("/intel_pmt/telem", 0) == 0) {
    const std::string num = s.substr(16);
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos)
      return p;
    const auto n = static_cast<unsigned>(std::stoul(num));
    return Parsed{2, n, false, n < g_pmt.size(), false, true};
  }
  if (s.rfind("/cpu", 0) != 0) return p;
  s.erase(0, 4);
  if (s.empty()) return Parsed{0, 0, false, true};
  if (s[0] != '/') return p;
  size_t slash = s.find('/', 1);
  std::string num = s.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return p;
  p.cpu = static_cast<unsigned>(std::stoul(num));
  if (p.cpu >= g_machine->profile().nr_cpus || !g_machine->cpu_online(p.cpu)) return p;
  if (slash == std::string::npos) return Parsed{1, p.cpu, false, true};
  std::string file = s.substr(slash + 1);
  if (file == "cpuid") return Parsed{2, p.cpu, false, true};
  if (file == "msr") return Parsed{2, p.cpu, true, true};
  return p;
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info*) {
  Parsed p = parse(path);
  if (!p.ok) return -ENOENT;
  std::memset(st, 0, sizeof(*st));
  if (p.depth < 2) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | (p.msr || p.mem ? 0600 : p.pmt ? 0440 : 0400);
    st->st_nlink = 1;
    // Physical addresses: the whole 52-bit space.
    if (p.mem) st->st_size = static_cast<off_t>(1ULL << 52);
    if (p.pmt) st->st_size = static_cast<off_t>(g_pmt[p.cpu].size);
  }
  return 0;
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
               fuse_readdir_flags) {
  Parsed p = parse(path);
  if (!p.ok || p.depth == 2) return -ENOTDIR;
  fill(buf, ".", nullptr, 0, FUSE_FILL_DIR_PLUS);
  fill(buf, "..", nullptr, 0, FUSE_FILL_DIR_PLUS);
  if (p.depth == -1) {
    fill(buf, "cpu", nullptr, 0, FUSE_FILL_DIR_PLUS);
    if (has_mem()) fill(buf, "mem", nullptr, 0, FUSE_FILL_DIR_PLUS);
    if (!g_pmt.empty()) fill(buf, "intel_pmt", nullptr, 0, FUSE_FILL_DIR_PLUS);
  } else if (p.pmt) {
    for (size_t i = 0; i < g_pmt.size(); ++i)
      fill(buf, ("telem" + std::to_string(i)).c_str(), nullptr, 0, FUSE_FILL_DIR_PLUS);
  } else if (p.depth == 0) {
    for (unsigned c = 0; c < g_machine->profile().nr_cpus; ++c)
      if (g_machine->cpu_online(c))
        fill(buf, std::to_string(c).c_str(), nullptr, 0, FUSE_FILL_DIR_PLUS);
  } else {
    fill(buf, "cpuid", nullptr, 0, FUSE_FILL_DIR_PLUS);
    fill(buf, "msr", nullptr, 0, FUSE_FILL_DIR_PLUS);
  }
  return 0;
}

int fs_open(const char* path, fuse_file_info* fi) {
  Parsed p = parse(path);
  // The drivers refuse an offline (or absent) CPU at open with ENXIO.
  if (!p.ok) return -ENXIO;
  if (p.depth != 2) return -EISDIR;
  if (!p.msr && !p.mem && (fi->flags & O_ACCMODE) != O_RDONLY) return -EPERM;
  fi->direct_io = 1;  // offsets are register numbers, not file positions
  fi->nonseekable = 0;
  return 0;
}

std::mutex g_delay_mu;
std::condition_variable g_delay_cv;

// A slow machine: each MSR access waits the configured delay, cut short when
// the delay is set back to 0 (so tests never depend on how long it is).
void slow_down() {
  std::unique_lock lock(g_delay_mu);
  const uint64_t us = g_delay_us.load();
  if (us == 0) return;
  ++g_waiting;
  g_delay_cv.wait_for(lock, std::chrono::microseconds(us), [] { return g_delay_us.load() == 0; });
  --g_waiting;
}

// One MMIO access of `size` bytes at physical address `off`.
bool mmio_access(size_t size, off_t off) {
  return (size == 1 || size == 2 || size == 4 || size == 8) && off >= 0 &&
         static_cast<uint64_t>(off) % size == 0;
}

int fs_read(const char* path, char* buf, size_t size, off_t off, fuse_file_info*) {
  Parsed p = parse(path);
  if (!p.ok || p.depth != 2) return -ENXIO;
  if (p.pmt) {
    // The aggregator's words covering [off, off + size), read now; a read
    // past the end is short, as the driver's.
    const uint64_t end = g_pmt[p.cpu].size;
    if (off < 0 || static_cast<uint64_t>(off) >= end) return 0;
    const uint64_t from = static_cast<uint64_t>(off);
    const uint64_t to = std::min<uint64_t>(end, from + size);
    ++g_pmt_reads;
    if (g_fail_pmt.load()) return -EIO;
    for (uint64_t w = from & ~uint64_t{7}; w < to; w += 8) {
      auto v = g_machine->pmt_read64(p.cpu, w);
      if (!v.ok()) return -EIO;
      unsigned char bytes[8];
      const uint64_t value = *v;
      std::memcpy(bytes, &value, 8);  // little-endian
      for (uint64_t b = std::max(w, from); b < std::min(w + 8, to); ++b)
        buf[b - from] = static_cast<char>(bytes[b - w]);
    }
    return static_cast<int>(to - from);
  }
  if (p.mem) {
    if (!mmio_access(size, off)) return -EIO;
    ++g_mmio_reads;
    auto v = g_machine->mmio_read(static_cast<uint64_t>(off), static_cast<unsigned>(size));
    if (!v.ok()) return -EIO;
    const uint64_t value = *v;
    std::memcpy(buf, &value, size);  // little-endian
    return static_cast<int>(size);
  }
  if (!p.msr) {
    if (size % 16 != 0) return -EINVAL;
    const auto pos = static_cast<uint64_t>(off);
    hw::CpuidRegs r =
        g_machine->cpuid(p.cpu, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32));
    ++g_cpuid;
    uint32_t regs[4] = {r.eax, r.ebx, r.ecx, r.edx};
    for (size_t i = 0; i < size; i += 16) std::memcpy(buf + i, regs, 16);
    return static_cast<int>(size);
  }
  if (size % 8 != 0) return -EINVAL;
  slow_down();
  for (size_t i = 0; i < size; i += 8) {
    ++g_reads;
    if (read_fails(p.cpu, static_cast<uint32_t>(off))) return -EIO;
    auto v = g_machine->read(p.cpu, static_cast<uint32_t>(off));
    if (!v.ok()) return -EIO;
    uint64_t value = *v;
    std::memcpy(buf + i, &value, 8);
  }
  return static_cast<int>(size);
}

int fs_write(const char* path, const char* buf, size_t size, off_t off, fuse_file_info*) {
  Parsed p = parse(path);
  if (p.ok && p.mem) {
    if (!mmio_access(size, off)) return -EIO;
    uint64_t value = 0;
    std::memcpy(&value, buf, size);
    ++g_mmio_writes;
    if (!g_machine->mmio_write(static_cast<uint64_t>(off), static_cast<unsigned>(size), value).ok())
      return -EIO;
    return static_cast<int>(size);
  }
  if (!p.ok || !p.msr) return -EPERM;
  if (size % 8 != 0) return -EINVAL;
  slow_down();
  for (size_t i = 0; i < size; i += 8) {
    uint64_t value;
    std::memcpy(&value, buf + i, 8);
    ++g_writes;
    if (!g_machine->write(p.cpu, static_cast<uint32_t>(off), value).ok()) return -EIO;
  }
  return static_cast<int>(size);
}

int fs_truncate(const char*, off_t, fuse_file_info*) { return 0; }

json handle(const json& req) {
  const std::string cmd = req.value("cmd", "");
  if (cmd == "clock") {
    if (req.contains("mode")) g_machine->set_manual_clock(req["mode"] == "manual");
    if (req.contains("advance_ms")) g_machine->advance_ms(req["advance_ms"].get<uint64_t>());
    return {{"ok", true}, {"now_ms", g_machine->now_ms()}};
  }
  if (cmd == "workload" && req.contains("channel")) {
    hw::Workload w;
    w.cache_footprint_bytes = req.value("footprint_bytes", uint64_t{0});
    w.bandwidth_mbps = req.value("bandwidth_mbps", 0.0);
    w.local_fraction = req.value("local_fraction", 1.0);
    w.write_fraction = req.value("write_fraction", 0.0);
    w.node = req.value("node", -1);
    auto r = g_machine->attach_channel_workload(req["channel"].get<uint32_t>(), w);
    if (!r.ok()) return {{"ok", false}, {"error", r.error().message}};
    return {{"ok", true}};
  }
  if (cmd == "workload") {
    if (!req.contains("cpu"))
      return {{"ok", false},
              {"error",
               "thread workloads need the simulated scheduler: real hardware retags "
               "threads in the kernel, which --backend msr does not model"}};
    hw::Workload w;
    w.cache_footprint_bytes = req.value("footprint_bytes", uint64_t{0});
    w.bandwidth_mbps = req.value("bandwidth_mbps", 0.0);
    w.local_fraction = req.value("local_fraction", 1.0);
    w.write_fraction = req.value("write_fraction", 0.0);
    auto r = g_machine->attach_cpu_workload(req["cpu"].get<unsigned>(), w);
    if (!r.ok()) return {{"ok", false}, {"error", r.error().message}};
    return {{"ok", true}};
  }
  if (cmd == "fault") {
    std::optional<unsigned> cpu;
    if (req.contains("cpu")) cpu = req["cpu"].get<unsigned>();
    g_machine->fail_next_writes(req.value("fail_writes", 0U), cpu);
    return {{"ok", true}};
  }
  if (cmd == "fail_reads") {
    std::lock_guard lock(g_fail_mu);
    if (req.value("clear", false)) {
      g_fail_reads.clear();
      return {{"ok", true}};
    }
    const long cpu = req.contains("cpu") ? req["cpu"].get<long>() : -1L;
    g_fail_reads.insert({cpu, req.at("msr").get<uint32_t>()});
    return {{"ok", true}};
  }
  if (cmd == "fail_pmt") {
    g_fail_pmt = req.at("fail").get<bool>();
    return {{"ok", true}};
  }
  if (cmd == "write") {
    auto r = g_machine->write(req.at("cpu").get<unsigned>(), req.at("msr").get<uint32_t>(),
                              req.at("value").get<uint64_t>());
    if (!r.ok()) return {{"ok", false}, {"error", "#GP: " + r.error().message}};
    return {{"ok", true}};
  }
  if (cmd == "cpu") {
    // CPU hotplug as the kernel does it: the CPU goes (its /dev/cpu/N with
    // it) or comes back, then sysfs's online list says so; whoever uses the
    // machine follows that file.
    const unsigned cpu = req.at("cpu").get<unsigned>();
    const bool online = req.at("online").get<bool>();
    auto r = g_machine->set_cpu_online(cpu, online);
    if (!r.ok()) return {{"ok", false}, {"error", r.error().message}};
    std::vector<unsigned> on;
    for (unsigned c = 0; c < g_machine->profile().nr_cpus; ++c)
      if (g_machine->cpu_online(c)) on.push_back(c);
    replace_text(g_sysfs_cpu / ("cpu" + std::to_string(cpu)) / "online", online ? "1\n" : "0\n");
    replace_text(g_sysfs_cpu / "online", cpulist(on));
    json list = json::array();
    for (unsigned c : on) list.push_back(c);
    return {{"ok", true}, {"cpu", cpu}, {"online", online}, {"online_cpus", list}};
  }
  if (cmd == "registers") {
    json regs = json::array();
    for (const auto& r : g_machine->dump_registers()) {
      char msr[16];
      std::snprintf(msr, sizeof(msr), "0x%x", r.msr);
      char value[24];
      std::snprintf(value, sizeof(value), "0x%llx", static_cast<unsigned long long>(r.value));
      regs.push_back({{"cpu", r.cpu},
                      {"msr", r.msr},
                      {"value", r.value},
                      {"msr_hex", msr},
                      {"value_hex", value}});
    }
    // Every register by feature, as resctrlfsd's registers command gives it.
    json groups = json::object();
    for (const auto& r : g_machine->dump_all_registers()) {
      auto hx = [](uint64_t v) {
        char b[24];
        std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
        return std::string(b);
      };
      json e =
          r.mmio_bytes != 0
              ? json{{"addr", r.mmio_addr}, {"addr_hex", hx(r.mmio_addr)}, {"bytes", r.mmio_bytes}}
              : json{{"cpu", r.cpu}, {"msr", r.msr}, {"msr_hex", hx(r.msr)}};
      e["value"] = r.value;
      e["value_hex"] = hx(r.value);
      groups[r.group].push_back(std::move(e));
    }
    return {{"ok", true}, {"registers", regs}, {"groups", groups}};
  }
  if (cmd == "delay") {
    {
      std::lock_guard lock(g_delay_mu);
      g_delay_us = req.value("us", uint64_t{0});
    }
    g_delay_cv.notify_all();
    return {{"ok", true}};
  }
  if (cmd == "counts") {
    return {{"ok", true},
            {"reads", g_reads.load()},
            {"writes", g_writes.load()},
            {"cpuid", g_cpuid.load()},
            {"mmio_reads", g_mmio_reads.load()},
            {"mmio_writes", g_mmio_writes.load()},
            {"pmt_reads", g_pmt_reads.load()},
            {"waiting", g_waiting.load()}};
  }
  return {{"ok", false}, {"error", "unknown command"}};
}

void serve_control(int lfd) {
  for (;;) {
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::string in;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = in.find('\n')) != std::string::npos) {
        json reply;
        try {
          reply = handle(json::parse(in.substr(0, nl)));
        } catch (const std::exception& e) {
          reply = {{"ok", false}, {"error", e.what()}};
        }
        in.erase(0, nl + 1);
        std::string out = reply.dump() + "\n";
        (void)!::write(fd, out.data(), out.size());
      }
    }
    ::close(fd);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "resctrl-fakehw: /dev/cpu/N/{cpuid,msr}, /dev/mem, the IRDT table and sysfs topology of a "
      "simulated machine"};
  std::string platform = "intel-2s";
  std::string root;
  std::string control;
  app.add_option("--platform", platform, "built-in profile name or JSON file");
  app.add_option("--root", root, "directory to lay out dev/cpu and sys/ under")->required();
  app.add_option("--control", control, "Unix socket for the simulated machine's knobs");
  CLI11_PARSE(app, argc, argv);

  auto profile = hw::sim::load_profile(platform);
  if (!profile.ok()) {
    std::fprintf(stderr, "resctrl-fakehw: %s\n", profile.error().message.c_str());
    return 2;
  }
  g_machine = std::make_shared<hw::sim::SimMachine>(std::move(profile).value());
  const std::filesystem::path r(root);
  g_sysfs_cpu = r / "sys/devices/system/cpu";
  write_sysfs(g_sysfs_cpu, g_machine->profile());
  // The kernel command line the machine was booted with: the profile's rdt=
  // options, which an operator passes on to resctrlfsd --rdt.
  {
    std::string rdt;
    for (const auto& on : g_machine->profile().rdt.force_on) rdt += (rdt.empty() ? "" : ",") + on;
    for (const auto& off : g_machine->profile().rdt.force_off)
      rdt += (rdt.empty() ? "!" : ",!") + off;
    write_text(r / "proc/cmdline",
               "BOOT_IMAGE=/vmlinuz ro" + (rdt.empty() ? "" : " rdt=" + rdt) + "\n");
  }
  // The firmware's ACPI IRDT table, where the real path reads it; and, for
  // the tests' broker, what an operator would know from the platform's
  // documentation: the width of a register whose RCS has REGW clear.
  if (has_mem()) {
    const auto& blob = g_machine->irdt_blob();
    write_text(r / "sys/firmware/acpi/tables/IRDT",
               std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
    write_text(r / "irdt_wide_bytes",
               std::to_string(g_machine->profile().io_rdt->wide_reg_bytes) + "\n");
  }
  const auto dev = r / "dev";
  std::filesystem::create_directories(dev);
  g_pmt = g_machine->pmt_regions();
  if (!g_pmt.empty()) write_pmt_sysfs(r, dev, g_machine->profile());

  if (!control.empty()) {
    int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (lfd < 0 || control.size() >= sizeof(addr.sun_path)) {
      std::fprintf(stderr, "resctrl-fakehw: cannot create %s\n", control.c_str());
      return 1;
    }
    std::memcpy(addr.sun_path, control.c_str(), control.size() + 1);
    ::unlink(control.c_str());
    if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(lfd, 8) != 0) {
      std::fprintf(stderr, "resctrl-fakehw: cannot listen on %s: %s\n", control.c_str(),
                   std::strerror(errno));
      return 1;
    }
    std::thread(serve_control, lfd).detach();
  }

  static fuse_operations ops{};
  ops.getattr = fs_getattr;
  ops.readdir = fs_readdir;
  ops.open = fs_open;
  ops.read = fs_read;
  ops.write = fs_write;
  ops.truncate = fs_truncate;
  const std::string mnt = dev.string();
  std::vector<std::string> args = {"resctrl-fakehw", "-f", "-o", "fsname=resctrl-fakehw", mnt};
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  return fuse_main(static_cast<int>(cargs.size()), cargs.data(), &ops, nullptr);
}

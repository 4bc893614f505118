// Implements probe_hardware() (hw/probe.h): the read-only look at the
// machine behind `resctrlfsd --self-check`. Register accesses to the machine
// are reads only, sent through the broker; everything the model writes goes
// to an in-memory register file.
#include "hw/probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "hw/broker/client.h"
#include "hw/real/dev_cpuid.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/pmt_sysfs.h"
#include "hw/x86/registers.h"
#include "hw/x86/sysfs_topology.h"

namespace resctrlfs::hw {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The model's registers: every write lands here, reads return the last
// value written (0 before). Never reaches a machine.
class MemoryMsrDevice final : public MsrDevice {
 public:
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override {
    std::lock_guard lock(mu_);
    auto it = regs_.find({cpu, msr});
    return it == regs_.end() ? 0 : it->second;
  }
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) override {
    std::lock_guard lock(mu_);
    regs_[{cpu, msr}] = value;
    return Ok();
  }
  uint64_t get(unsigned cpu, uint32_t msr) const {
    std::lock_guard lock(mu_);
    auto it = regs_.find({cpu, msr});
    return it == regs_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<unsigned, uint32_t>, uint64_t> regs_;
};

class Probe final : public HwProbe {
 public:
  std::string cpu_identity() const override { return identity_; }
  std::vector<std::string> cpuid_flags() const override { return flags_; }
  unsigned cpus_checked() const override { return cpus_checked_; }
  std::vector<std::string> cpuid_differences() const override { return cpuid_diffs_; }
  Arch* model() override { return model_.get(); }
  std::string model_error() const override { return model_error_; }
  std::string machine_error() const override { return machine_error_; }
  std::vector<std::string> unread_registers() const override { return unread_; }
  std::vector<ProbeTelemetry> telemetry() const override { return telemetry_; }
  std::pair<uint64_t, uint64_t> machine_ops() const override { return {reads_sent_, 0}; }

  std::vector<ProbeRegister> closid_registers(uint32_t mc, uint32_t hc) const override {
    std::vector<ProbeRegister> out;
    if (!model_) return out;
    for (const Resource& res : model_->info().resources) {
      if (!res.alloc_capable || res.rid == ResourceId::PERF_PKG) continue;
      if (res.rid == ResourceId::CB) {
        add_cba_registers(res, mc, hc, out);
        continue;
      }
      std::vector<ConfType> types{ConfType::NONE};
      if (model_->cdp_enabled(res.rid)) types = {ConfType::DATA, ConfType::CODE};
      for (const CtrlDomain& d : res.ctrl_domains) {
        const unsigned cpu = d.cpus.first();
        for (ConfType t : types) {
          const uint32_t mi = cdp_hw_index(mc, t), hi = cdp_hw_index(hc, t);
          if (hi >= res.num_closid || mi >= res.num_closid) continue;
          ProbeRegister r;
          r.what = std::string(resource_name(res.rid)) + " domain " + std::to_string(d.id) +
                   " CLOSID " + std::to_string(hc) +
                   (t == ConfType::DATA   ? " (DATA)"
                    : t == ConfType::CODE ? " (CODE)"
                                          : "");
          r.cpu = cpu;
          r.msr = model_->ctrl_msr(res.rid, hi);
          r.model = mem_->get(cpu, model_->ctrl_msr(res.rid, mi));
          auto it = machine_.find({cpu, r.msr});
          if (it != machine_.end()) r.machine = it->second;
          out.push_back(std::move(r));
        }
      }
    }
    return out;
  }

  // CBA: the throttle level of CLOSID `hc` is byte hc % CBA_CLOS_PER_MSR of
  // its register, on every CPU of each domain; the model's is model CLOSID
  // `mc`'s byte. Compared byte for byte, so the neighbours sharing the
  // register do not count.
  void add_cba_registers(const Resource& res, uint32_t mc, uint32_t hc,
                         std::vector<ProbeRegister>& out) const {
    if (hc >= res.num_closid || mc >= res.num_closid) return;
    auto byte = [](uint64_t reg, uint32_t closid) {
      return (reg >> (8 * (closid % x86::CBA_CLOS_PER_MSR))) & 0xff;
    };
    for (const CtrlDomain& d : res.ctrl_domains) {
      for (unsigned cpu : d.cpus.cpus()) {
        ProbeRegister r;
        r.what = "CB domain " + std::to_string(d.id) + " CLOSID " + std::to_string(hc) + " (byte " +
                 std::to_string(hc % x86::CBA_CLOS_PER_MSR) + ", CPU " + std::to_string(cpu) + ")";
        r.cpu = cpu;
        r.msr = model_->ctrl_msr(res.rid, hc);
        r.model = byte(mem_->get(cpu, model_->ctrl_msr(res.rid, mc)), mc);
        auto it = machine_.find({cpu, r.msr});
        if (it != machine_.end()) r.machine = byte(it->second, hc);
        out.push_back(std::move(r));
      }
    }
  }

  std::vector<uint32_t> machine_closids_like(uint32_t mc) const override {
    return closids_by_value(mc, /*unsure=*/false);
  }
  std::vector<uint32_t> machine_closids_unsure(uint32_t mc) const override {
    return closids_by_value(mc, /*unsure=*/true);
  }

  // The CLOSIDs whose registers on the machine equal `mc`'s in the model:
  // every one read (unsure false), or every one read equal and some not
  // read (unsure true).
  std::vector<uint32_t> closids_by_value(uint32_t mc, bool unsure) const {
    std::vector<uint32_t> out;
    if (!model_) return out;
    unsigned n = ~0U;
    for (const Resource& res : model_->info().resources) {
      if (!res.alloc_capable || res.rid == ResourceId::PERF_PKG) continue;
      n = std::min(n, model_->cdp_enabled(res.rid) ? res.num_closid / 2 : res.num_closid);
    }
    if (n == ~0U) return out;
    for (uint32_t c = 0; c < n; ++c) {
      auto regs = closid_registers(mc, c);
      bool equal = !regs.empty(), missing = false;
      for (const auto& r : regs) {
        missing = missing || !r.machine;
        equal = equal && (!r.machine || *r.machine == r.model);
      }
      if (equal && missing == unsure) out.push_back(c);
    }
    return out;
  }

  std::optional<bool> machine_cdp(ResourceId rid) const override {
    if (!model_ || (rid != ResourceId::L3 && rid != ResourceId::L2)) return std::nullopt;
    const Resource& res = model_->info().res(rid);
    if (!res.alloc_capable || res.ctrl_domains.empty()) return std::nullopt;
    const uint32_t msr = rid == ResourceId::L3 ? x86::IA32_L3_QOS_CFG : x86::IA32_L2_QOS_CFG;
    auto it = machine_.find({res.ctrl_domains.front().cpus.first(), msr});
    if (it == machine_.end()) return std::nullopt;
    return (it->second & x86::QOS_CFG_CDP_ENABLE) != 0;
  }

  std::map<unsigned, uint32_t> machine_cpu_closids() const override {
    std::map<unsigned, uint32_t> out;
    for (const auto& [key, value] : machine_) {
      if (key.second == x86::IA32_PQR_ASSOC)
        out[key.first] = static_cast<uint32_t>(value >> x86::PQR_ASSOC_CLOS_SHIFT);
    }
    return out;
  }

  std::map<unsigned, uint32_t> machine_cpu_rmids() const override {
    std::map<unsigned, uint32_t> out;
    for (const auto& [key, value] : machine_) {
      if (key.second == x86::IA32_PQR_ASSOC)
        out[key.first] = static_cast<uint32_t>(value & x86::PQR_ASSOC_RMID_MASK);
    }
    return out;
  }

  void check_cpuid(const CpuidSource& src, const x86::Topology& topo, const std::string& dev) {
    const unsigned first = topo.online.first();
    struct stat st;
    if (::stat((dev + "/" + std::to_string(first) + "/cpuid").c_str(), &st) != 0) {
      cpuid_diffs_.push_back("not checked: " + dev + "/" + std::to_string(first) +
                             "/cpuid is missing (load the cpuid module: modprobe cpuid)");
      return;
    }
    // The daemon's own check at start-up (the same leaves, the same text).
    cpus_checked_ = topo.online.count();
    for (std::string& d : x86::rdt_cpuid_differences(src, topo))
      cpuid_diffs_.push_back(std::move(d));
  }

  void build_model(const CpuidSource& src, const x86::Topology& topo, const std::string& rdt,
                   const std::string& socket, const std::string& root) {
    const x86::RdtOptions opts = x86::RdtOptions::parse(rdt);
    x86::X86Platform info = x86::decode_platform(src, topo, nullptr, opts);
    // STLB QoS is enumerated in registers, not CPUID: read (never written)
    // through the broker, as the daemon does at start-up. No broker: no
    // STLB in the model, and read_machine() says why.
    auto dev = std::make_shared<broker::BrokerMsrDevice>(socket);
    const bool connected = dev->client().connect().ok();
    if (connected) x86::decode_stlb(info, src, *dev);
    // Telemetry (PERF_PKG): the aggregators sysfs lists, as the daemon
    // finds them; one counter of each read through the broker. The model's
    // PERF_PKG resource is built from them either way (its info/ files
    // depend only on the layouts).
    std::vector<x86::PmtAggregator> pmt =
        x86::read_pmt_aggregators(root, topo, [&](const std::string& line) {
          telemetry_.push_back(ProbeTelemetry{"left out", false, line});
        });
    std::shared_ptr<PmtTelemetryDevice> telemetry;
    if (!pmt.empty()) {
      auto t = std::make_shared<broker::BrokerPmtDevice>(dev, pmt);
      for (size_t i = 0; i < pmt.size(); ++i) {
        char what[96];
        std::snprintf(what, sizeof(what), "telem%u: GUID 0x%x, package %d", pmt[i].telem,
                      pmt[i].region.guid, pmt[i].region.package_id);
        ProbeTelemetry p{what, false, {}};
        if (!connected) {
          p.note = "the MSR broker (resctrl-msrd) is not reachable";
        } else if (auto v = t->pmt_read64(i, 0); v.ok()) {
          p.served = true;
        } else {
          p.note = "the broker did not serve a read of it: " + v.error().message;
        }
        telemetry_.push_back(std::move(p));
      }
      telemetry = std::move(t);
    }
    if (connected) reads_sent_ += dev->client().ops_sent();
    char model[64];
    std::snprintf(model, sizeof(model), " family %u model 0x%x stepping %u", info.family,
                  info.model, info.stepping);
    identity_ = info.vendor + model;
    flags_ = x86::cpuinfo_rdt_flags(info);
    bool any = info.res(ResourceId::L3).mon.capable;
    for (const auto& r : info.resources) any = any || r.alloc_capable;
    if (!any) {
      model_error_ =
          "CPUID enumerates no RDT/PQoS resource that the rdt= options and Linux's "
          "quirks for this model leave on";
      return;
    }
    const unsigned first = topo.online.first();
    x86::HwLimits limits = x86::decode_limits(src, first < topo.nr_cpus ? first : 0);
    mem_ = std::make_shared<MemoryMsrDevice>();
    auto arch = x86::X86Arch::create(std::move(info), limits, mem_, nullptr, telemetry, opts);
    if (!arch.ok()) {
      model_error_ = "cannot build the model: " + arch.error().message;
      return;
    }
    model_ = std::move(arch).value();
  }

  void read_machine(const std::string& socket, const x86::Topology& topo) {
    if (!model_) {
      machine_error_ = "no RDT/PQoS in CPUID: no register to read";
      return;
    }
    broker::BrokerMsrDevice dev(socket);
    if (auto c = dev.client().connect(); !c.ok()) {
      machine_error_ = c.error().message;
      return;
    }
    std::vector<MsrOp> ops;
    auto add = [&](unsigned cpu, uint32_t msr) { ops.push_back(MsrOp{cpu, msr, 0, false, 0}); };
    for (unsigned cpu = 0; cpu < topo.nr_cpus; ++cpu)
      if (topo.online.test(cpu)) add(cpu, x86::IA32_PQR_ASSOC);
    for (const Resource& res : model_->info().resources) {
      if (!res.alloc_capable || res.rid == ResourceId::PERF_PKG) continue;
      for (const CtrlDomain& d : res.ctrl_domains) {
        // A CBA register is the CPU's own (each CPU of a domain holds a
        // copy), and packs CBA_CLOS_PER_MSR CLOSIDs: each register once
        // on every CPU. The others once per domain.
        const bool cba = res.rid == ResourceId::CB;
        const std::vector<unsigned> cpus = cba ? d.cpus.cpus() : std::vector{d.cpus.first()};
        for (unsigned cpu : cpus) {
          if (res.is_bitmap() && res.cache.cdp_capable)
            add(cpu, res.rid == ResourceId::L3 ? x86::IA32_L3_QOS_CFG : x86::IA32_L2_QOS_CFG);
          for (uint32_t i = 0; i < res.num_closid; i += cba ? x86::CBA_CLOS_PER_MSR : 1)
            add(cpu, model_->ctrl_msr(res.rid, i));
        }
      }
    }
    reads_sent_ += ops.size();
    dev.run(ops);
    if (dev.client().round_trips() == 0) {
      // Not one reply: the broker is not serving this process.
      machine_error_ = "the MSR broker (resctrl-msrd) at " + socket +
                       " did not serve this process (uid " + std::to_string(::getuid()) +
                       "; it serves only the uid given by its --allow-uid, see its log)";
      return;
    }
    if (!std::all_of(ops.begin(), ops.end(), [](const MsrOp& o) { return o.err == 0; })) {
      // One refused read makes the broker refuse the whole batch: read one
      // by one to tell which.
      for (MsrOp& op : ops) {
        if (op.err == 0) continue;
        ++reads_sent_;
        auto v = dev.read(op.cpu, op.msr);
        op.err = v.ok() ? 0 : v.error().code;
        if (v.ok()) op.value = *v;
      }
    }
    for (const MsrOp& op : ops) {
      if (op.err == 0) {
        machine_[{op.cpu, op.msr}] = op.value;
      } else {
        unread_.push_back("CPU " + std::to_string(op.cpu) + " MSR " + hex(op.msr) + ": " +
                          (op.err == EPERM ? "refused by the broker" : "read failed (#GP)"));
      }
    }
  }

 private:
  std::string identity_;
  std::vector<std::string> flags_;
  unsigned cpus_checked_ = 0;
  std::vector<std::string> cpuid_diffs_;
  std::shared_ptr<MemoryMsrDevice> mem_;
  std::unique_ptr<x86::X86Arch> model_;
  std::string model_error_;
  std::string machine_error_;
  std::vector<std::string> unread_;
  std::vector<ProbeTelemetry> telemetry_;
  uint64_t reads_sent_ = 0;
  std::map<std::pair<unsigned, uint32_t>, uint64_t> machine_;
};

}  // namespace

Result<std::unique_ptr<HwProbe>> probe_hardware(const std::string& broker_socket,
                                                const std::string& rdt,
                                                const std::string& hw_root) {
  const std::string root = hw_root == "/" ? "" : hw_root;
  RESCTRLFS_ASSIGN_OR_RETURN(x86::Topology topo,
                             x86::read_sysfs_topology(root + "/sys/devices/system/cpu"));
  auto p = std::make_unique<Probe>();
  // Every CPU's own leaves: no fallback to this CPU's instruction.
  real::DevCpuidSource per_cpu(root + "/dev/cpu", /*instruction_fallback=*/false);
  p->check_cpuid(per_cpu, topo, root + "/dev/cpu");
  real::DevCpuidSource cpuid(root + "/dev/cpu", /*instruction_fallback=*/root.empty());
  p->build_model(cpuid, topo, rdt, broker_socket, root);
  p->read_machine(broker_socket, topo);
  return std::unique_ptr<HwProbe>(std::move(p));
}

}  // namespace resctrlfs::hw

// Defines FakeArch: a small in-memory hw::Arch with a configurable
// PlatformInfo, for unit tests that need platform shapes or hardware
// answers the simulated machine does not produce on demand (monitor-only
// platforms, Error/Unavailable reads, backends that do not model thread
// tags, failing control writes).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hw/arch.h"

namespace resctrlfs::fs::testing {

class FakeArch final : public hw::Arch, public hw::ThreadTagger {
 public:
  explicit FakeArch(hw::PlatformInfo info) : info_(std::move(info)) {}

  // A platform with `ncpus` CPUs in two L3 domains; the caller switches
  // resources and monitoring on.
  static hw::PlatformInfo base_platform(unsigned ncpus = 4) {
    hw::PlatformInfo p;
    p.nr_cpus = ncpus;
    p.online = CpuMask(ncpus);
    for (unsigned c = 0; c < ncpus; ++c) p.online.set(c);
    for (int i = 0; i < hw::kNumResources; ++i) p.resources[i].rid = static_cast<hw::ResourceId>(i);
    p.res(hw::ResourceId::L3).ctrl_scope = hw::Scope::L3_CACHE;
    p.res(hw::ResourceId::L2).ctrl_scope = hw::Scope::L2_CACHE;
    for (hw::ResourceId bw : {hw::ResourceId::MB, hw::ResourceId::SMBA, hw::ResourceId::CB}) {
      p.res(bw).ctrl_scope = hw::Scope::L3_CACHE;
      p.res(bw).schema_fmt = hw::SchemaFormat::PERCENT;
    }
    p.res(hw::ResourceId::STLB).ctrl_scope = hw::Scope::CORE;
    p.res(hw::ResourceId::L3).mon.scope = hw::Scope::L3_CACHE;
    p.res(hw::ResourceId::PERF_PKG).mon.scope = hw::Scope::PACKAGE;
    return p;
  }
  static std::vector<hw::CtrlDomain> two_domains(unsigned ncpus) {
    hw::CtrlDomain a{0, CpuMask(ncpus)}, b{1, CpuMask(ncpus)};
    for (unsigned c = 0; c < ncpus; ++c) (c < ncpus / 2 ? a : b).cpus.set(c);
    return {a, b};
  }
  static void add_l3_cat(hw::PlatformInfo& p, unsigned cbm_len, unsigned closids) {
    hw::Resource& r = p.resources[0];
    r.alloc_capable = true;
    r.num_closid = closids;
    r.cache.cbm_len = cbm_len;
    r.cache.min_cbm_bits = 1;
    r.cache.cache_size_bytes = 1 << 20;
    r.ctrl_domains = two_domains(p.nr_cpus);
  }
  static void add_l3_mon(hw::PlatformInfo& p, unsigned rmids) {
    p.res(hw::ResourceId::L3).mon.capable = true;
    p.res(hw::ResourceId::L3).mon.num_rmids = rmids;
    p.res(hw::ResourceId::L3).mon.occupancy_scale = 64;
    p.res(hw::ResourceId::L3).mon.events = {hw::EventId::LLC_OCCUPANCY, hw::EventId::MBM_TOTAL};
    p.res(hw::ResourceId::L3).mon.realloc_limit_bytes = 1 << 20;
    p.res(hw::ResourceId::L3).mon.default_threshold = 4096;
    for (const hw::CtrlDomain& d : two_domains(p.nr_cpus))
      p.res(hw::ResourceId::L3).mon.mon_domains.push_back({d.id, d.cpus});
  }

  // Telemetry: one PERF_PKG domain per entry of `packages`, events with
  // their fraction bits.
  static void add_perf_pkg(hw::PlatformInfo& p, unsigned rmids, std::vector<hw::MonEvent> events,
                           std::vector<int> packages) {
    p.res(hw::ResourceId::PERF_PKG).mon.capable = true;
    p.res(hw::ResourceId::PERF_PKG).mon.num_rmids = rmids;
    p.res(hw::ResourceId::PERF_PKG).mon.events = std::move(events);
    for (int pkg : packages)
      p.res(hw::ResourceId::PERF_PKG).mon.mon_domains.push_back({pkg, CpuMask(p.nr_cpus)});
  }

  const hw::PlatformInfo& info() const override { return info_; }
  // For tests that take a domain away under a mounted filesystem.
  hw::PlatformInfo& mutable_info() { return info_; }
  Result<void> update_ctrls(const std::vector<hw::CtrlUpdate>& updates) override {
    // A slow machine: the hook waits (in a BlockingSection) before anything
    // is written.
    if (on_update) on_update();
    if (fail_writes_ > 0) {
      --fail_writes_;
      return Error::make(EIO, "Hardware write failed\n");
    }
    for (const hw::CtrlUpdate& u : updates)
      ctrls_[{u.rid, u.type, u.domain_id, u.closid}] = u.value;
    return Ok();
  }
  uint32_t get_ctrl(hw::ResourceId rid, hw::ConfType type, int domain_id,
                    uint32_t closid) const override {
    auto it = ctrls_.find({rid, type, domain_id, closid});
    return it == ctrls_.end() ? default_ctrl(rid) : it->second;
  }
  uint32_t default_ctrl(hw::ResourceId rid) const override {
    const hw::Resource& r = info_.res(rid);
    return r.is_bitmap() ? r.cache.full_mask() : r.membw.max_bw;
  }
  Result<void> set_cdp_enabled(hw::ResourceId rid, bool enable) override {
    if (!info_.res(rid).cache.cdp_capable) return Error::make(EINVAL);
    cdp_[static_cast<int>(rid)] = enable;
    return Ok();
  }
  bool cdp_enabled(hw::ResourceId rid) const override { return cdp_[static_cast<int>(rid)]; }
  Result<void> reset_all_ctrls() override {
    ctrls_.clear();
    return Ok();
  }
  Result<void> set_cpu_assoc(unsigned cpu, uint32_t closid, uint32_t rmid) override {
    assoc[cpu] = {closid, rmid};
    return Ok();
  }
  void set_thread_tags(int tid, uint32_t closid, uint32_t rmid) override {
    thread_tags[tid] = {closid, rmid};
  }
  void thread_exited(int tid) override { thread_tags.erase(tid); }
  hw::ThreadTagger* thread_tagger() override { return models_tags ? this : nullptr; }
  hw::CounterValue read_counter(hw::ResourceId rid, int domain_id, uint32_t closid, uint32_t rmid,
                                hw::EventId ev, MonCtx* ctx,
                                std::optional<unsigned> cntr_id) override {
    (void)ctx;
    (void)cntr_id;
    reads.emplace_back(rid, domain_id, closid, rmid, ev);
    auto it = values.find({domain_id, rmid, ev});
    if (it == values.end())
      return rid == hw::ResourceId::PERF_PKG ? hw::CounterValue{hw::ReadError::kUnavailable, 0}
                                             : hw::CounterValue{hw::ReadError::kNone, 0};
    return it->second;
  }
  void reset_counter(hw::ResourceId, int, uint32_t, uint32_t, hw::EventId) override {}
  void reset_all_counters(hw::ResourceId, int) override {}
  Result<void> set_event_config(hw::ResourceId, int, hw::EventId, uint32_t) override {
    return Ok();
  }
  uint32_t event_config(hw::ResourceId, int, hw::EventId) const override { return 0; }
  // An architecture whose monitoring ids depend on the CLOSID
  // (PlatformInfo::rmid_depends_on_closid): `rmids_per_closid` RMIDs per
  // CLOSID, index = closid * rmids_per_closid + rmid.
  uint32_t rmid_idx_encode(uint32_t closid, uint32_t rmid) const override {
    if (!info_.rmid_depends_on_closid) return rmid;
    return closid * rmids_per_closid + rmid;
  }
  std::pair<uint32_t, uint32_t> rmid_idx_decode(uint32_t idx) const override {
    if (!info_.rmid_depends_on_closid) return {kAnyClosid, idx};
    return {idx / rmids_per_closid, idx % rmids_per_closid};
  }
  Result<void> set_io_alloc_enabled(hw::ResourceId rid, bool enable) override {
    if (!info_.res(rid).cache.io_alloc_capable) return Error::make(EINVAL);
    if (fail_io_alloc) return Error::make(EIO, "Hardware write failed\n");
    io_alloc_[static_cast<int>(rid)] = enable;
    return Ok();
  }
  bool io_alloc_enabled(hw::ResourceId rid) const override {
    return io_alloc_[static_cast<int>(rid)];
  }
  Result<void> set_cntr_assign_enabled(hw::ResourceId, bool) override { return Ok(); }
  Result<void> config_cntr(hw::ResourceId, int, unsigned, uint32_t, uint32_t, hw::EventId, uint32_t,
                           bool) override {
    return Ok();
  }
  Result<void> pseudo_lock(hw::ResourceId rid, int domain_id, uint32_t closid,
                           uint32_t cbm) override {
    if (!info_.pseudo_lock_capable) return Error::make(EINVAL);
    if (fail_pseudo_lock != 0) return Error::make(fail_pseudo_lock, "injected");
    ctrls_[{rid, hw::ConfType::NONE, domain_id, closid}] = cbm;
    locked[{rid, domain_id}] = cbm;
    return Ok();
  }
  void pseudo_unlock(hw::ResourceId rid, int domain_id) override { locked.erase({rid, domain_id}); }
  uint32_t pseudo_locked_cbm(hw::ResourceId rid, int domain_id) const override {
    auto it = locked.find({rid, domain_id});
    return it == locked.end() ? 0 : it->second;
  }

  // I/O RDT channels: what the machine lists, and every tagging call in
  // order ("tags 0x100 1 5": channel, CLOSID, RMID; "tagging 1 0": alloc,
  // mon). fail_io_tags makes the next set_io_channel_tags calls fail,
  // fail_io_tagging the next set_io_tagging calls; a failed call is not
  // logged.
  hw::IoTagCaps io_tag_caps() const override { return io_caps; }
  std::vector<hw::IoChannelInfo> io_channels() const override { return io_chans; }
  Result<void> set_io_channel_tags(uint32_t id, uint32_t closid, uint32_t rmid) override {
    if (fail_io_tags != 0) {
      --fail_io_tags;
      return Error::make(EIO, "Hardware write failed\n");
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "tags %#x %u %u", id, closid, rmid);
    io_log.emplace_back(buf);
    return Ok();
  }
  Result<void> set_io_tagging(bool alloc, bool mon) override {
    if (fail_io_tagging != 0) {
      --fail_io_tagging;
      return Error::make(EIO, "Hardware write failed\n");
    }
    io_log.push_back(std::string("tagging ") + (alloc ? "1 " : "0 ") + (mon ? "1" : "0"));
    return Ok();
  }
  std::vector<hw::IoChannelInfo> io_chans;
  hw::IoTagCaps io_caps;
  std::vector<std::string> io_log;
  unsigned fail_io_tags = 0;
  unsigned fail_io_tagging = 0;

  std::function<void()> on_update;
  bool models_tags = true;
  bool fail_io_alloc = false;
  unsigned fail_writes_ = 0;
  std::map<std::tuple<int, uint32_t, hw::EventId>, hw::CounterValue> values;
  // Every read_counter call: (resource, domain, closid, rmid, event).
  std::vector<std::tuple<hw::ResourceId, int, uint32_t, uint32_t, hw::EventId>> reads;
  unsigned rmids_per_closid = 1;
  std::map<unsigned, std::pair<uint32_t, uint32_t>> assoc;
  std::map<int, std::pair<uint32_t, uint32_t>> thread_tags;
  int fail_pseudo_lock = 0;  // errno pseudo_lock() fails with, 0: succeeds
  std::map<std::pair<hw::ResourceId, int>, uint32_t> locked;

 private:
  hw::PlatformInfo info_;
  std::map<std::tuple<hw::ResourceId, hw::ConfType, int, uint32_t>, uint32_t> ctrls_;
  bool cdp_[hw::kNumResources] = {};
  bool io_alloc_[hw::kNumResources] = {};
};

}  // namespace resctrlfs::fs::testing

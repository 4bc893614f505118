// Implements MpamMachine (see machine.h).
#include "hw/mpam/machine.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <utility>

#include "hw/mpam/registers.h"

namespace resctrlfs::hw::mpam {

namespace {

// Our layout of the MSC register pages (the firmware table gives real ones).
constexpr uint64_t kMscBase = 0x2000'0000;
constexpr uint64_t kMscStride = 0x1'0000;

uint32_t key(uint16_t partid, uint8_t pmg) { return (static_cast<uint32_t>(partid) << 8) | pmg; }

bool is_monitor_access(uint32_t off) {
  return off == MSMON_CFG_MON_SEL || off == MSMON_CFG_CSU_FLT || off == MSMON_CFG_CSU_CTL;
}

}  // namespace

MpamMachine::MpamMachine(MpamPlatform p)
    : p_(std::move(p)), start_(std::chrono::steady_clock::now()) {
  const auto& cpus = p_.topology.cpus;
  auto add = [&](MscLocus locus, unsigned level, int id, const MscParams& params, uint64_t size) {
    MscInfo info{locus, level, id, {}, kMscBase + kMscStride * infos_.size()};
    for (unsigned c = 0; c < cpus.size(); ++c)
      if ((level == 3 ? cpus[c].l3 : cpus[c].l2) == id) info.cpus.push_back(c);
    const size_t index = infos_.size();
    int cache = -1;
    if (params.csu_monitors != 0) {
      cache = static_cast<int>(caches_.size());
      caches_.push_back(Cache{index, size, {}});
    }
    msc_cache_.push_back(cache);
    infos_.push_back(std::move(info));
    mscs_.push_back(std::make_unique<MscModel>(
        params, [this, cache](uint16_t partid, std::optional<uint8_t> pmg) -> uint64_t {
          return cache < 0 ? 0 : csu_bytes_locked(static_cast<size_t>(cache), partid, pmg);
        }));
  };
  std::vector<int> l3s, l2s;
  for (const CpuPlace& c : cpus) {
    if (c.l3 >= 0 && std::find(l3s.begin(), l3s.end(), c.l3) == l3s.end()) l3s.push_back(c.l3);
    if (c.l2 >= 0 && std::find(l2s.begin(), l2s.end(), c.l2) == l2s.end()) l2s.push_back(c.l2);
  }
  std::sort(l3s.begin(), l3s.end());
  std::sort(l2s.begin(), l2s.end());
  for (int id : l3s) add(MscLocus::CACHE, 3, id, p_.l3_msc, p_.topology.l3_size_bytes);
  if (p_.l2_msc.cpbm_wd != 0 || p_.l2_msc.csu_monitors != 0)
    for (int id : l2s) add(MscLocus::CACHE, 2, id, p_.l2_msc, p_.topology.l2_size_bytes);
  cpu_cache_.assign(cpus.size(), -1);
  for (size_t m = 0; m < infos_.size(); ++m) {
    if (msc_cache_[m] < 0 || infos_[m].level != 3) continue;
    for (unsigned c : infos_[m].cpus) cpu_cache_[c] = msc_cache_[m];
  }
  cpu_label_.assign(cpus.size(), MpamLabel{});
  online_.assign(cpus.size(), true);
}

uint64_t MpamMachine::now_us_locked() const {
  if (manual_) return manual_us_;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start_)
                                   .count()) +
         manual_us_;
}

void MpamMachine::settle_locked() {
  const uint64_t now = now_us_locked();
  if (now <= last_us_) return;
  const double dt = static_cast<double>(now - last_us_);
  last_us_ = now;
  for (Cache& c : caches_) step_locked(c, dt);
}

void MpamMachine::step_locked(Cache& c, double dt_us) {
  const MscModel& msc = *mscs_[c.msc];
  const unsigned wd = msc.params().cpbm_wd;
  // Entities on this cache: (label, footprint share).
  struct Ent {
    MpamLabel label;
    double fp;
  };
  std::vector<Ent> ents;
  auto cpus_of_cache = [&](unsigned cpu) {
    return cpu < cpu_cache_.size() && cpu_cache_[cpu] >= 0 &&
           &caches_[static_cast<size_t>(cpu_cache_[cpu])] == &c;
  };
  auto add = [&](const Workload& w, std::optional<MpamLabel> own) {
    if (w.cache_footprint_bytes == 0) return;
    if (w.cpu >= 0) {
      const unsigned cpu = static_cast<unsigned>(w.cpu);
      if (!cpus_of_cache(cpu) || !online_[cpu]) return;
      MpamLabel l = own && !(*own == MpamLabel{}) ? *own : cpu_label_[cpu];
      ents.push_back({l, static_cast<double>(w.cache_footprint_bytes)});
      return;
    }
    // Unpinned: spread over the monitored caches of the allowed CPUs.
    std::vector<int> caches;
    for (unsigned cpu = 0; cpu < cpu_cache_.size(); ++cpu) {
      if (!w.allowed_cpus.empty() &&
          std::find(w.allowed_cpus.begin(), w.allowed_cpus.end(), cpu) == w.allowed_cpus.end())
        continue;
      if (cpu_cache_[cpu] >= 0 && online_[cpu] &&
          std::find(caches.begin(), caches.end(), cpu_cache_[cpu]) == caches.end())
        caches.push_back(cpu_cache_[cpu]);
    }
    bool mine = false;
    for (int k : caches) mine = mine || &caches_[static_cast<size_t>(k)] == &c;
    if (!mine) return;
    ents.push_back(
        {own.value_or(MpamLabel{}), static_cast<double>(w.cache_footprint_bytes) / caches.size()});
  };
  for (const auto& [cpu, w] : cpu_work_) {
    Workload pinned = w;
    pinned.cpu = static_cast<int>(cpu);
    add(pinned, std::nullopt);
  }
  for (const auto& [tid, w] : thread_work_) {
    auto it = thread_label_.find(tid);
    add(w, it == thread_label_.end() ? std::optional<MpamLabel>{} : it->second);
  }
  for (const auto& [tid, w] : task_work_) {
    if (thread_work_.count(tid)) continue;
    auto it = thread_label_.find(tid);
    add(w, it == thread_label_.end() ? std::optional<MpamLabel>{} : it->second);
  }
  // Targets: each PARTID's capacity shared by footprint, then capped by the cache.
  std::map<uint16_t, double> partid_fp;
  for (const Ent& e : ents) partid_fp[e.label.partid_d] += e.fp;
  std::map<uint32_t, double> target;
  const double size = static_cast<double>(c.size);
  for (const Ent& e : ents) {
    const uint32_t mask = msc.cpbm(e.label.partid_d);
    const double cap = wd == 0 ? size : size * std::popcount(mask) / wd;
    const double share = std::min(1.0, cap / partid_fp[e.label.partid_d]);
    target[key(e.label.partid_d, e.label.pmg_d)] += e.fp * share;
  }
  double total = 0;
  for (const auto& [k, t] : target) total += t;
  if (total > size)
    for (auto& [k, t] : target) t *= size / total;
  const double f = 1.0 - std::exp(-dt_us / (p_.fill_ms * 1000.0));
  double filled = 0;
  for (const auto& [k, t] : target) {
    double& o = c.occ[k];
    if (t > o) {
      filled += (t - o) * f;
      o += (t - o) * f;
    }
  }
  // Lines leave only when others fill: those above their target lose what
  // the fills take, in proportion to their excess.
  double excess = 0;
  for (auto& [k, o] : c.occ) {
    auto it = target.find(k);
    const double t = it == target.end() ? 0 : it->second;
    if (o > t) excess += o - t;
  }
  double in_use = 0;
  for (auto& [k, o] : c.occ) in_use += o;
  const double must_free = std::min(excess, std::max(filled, in_use - size));
  if (must_free > 0 && excess > 0) {
    for (auto& [k, o] : c.occ) {
      auto it = target.find(k);
      const double t = it == target.end() ? 0 : it->second;
      if (o > t) o -= (o - t) * (must_free / excess);
    }
  }
}

uint64_t MpamMachine::csu_bytes_locked(size_t cache, uint16_t partid,
                                       std::optional<uint8_t> pmg) const {
  const Cache& c = caches_[cache];
  double bytes = 0;
  for (const auto& [k, o] : c.occ)
    if ((k >> 8) == partid && (!pmg || (k & 0xff) == *pmg)) bytes += o;
  return static_cast<uint64_t>(bytes);
}

Result<uint32_t> MpamMachine::read32(size_t msc, uint32_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  if (msc >= mscs_.size()) return Error::make(EIO, "no MSC " + std::to_string(msc));
  if (offset == MSMON_CSU) settle_locked();
  return mscs_[msc]->read32(offset);
}

Result<void> MpamMachine::write32(size_t msc, uint32_t offset, uint32_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (msc >= mscs_.size()) return Error::make(EIO, "no MSC " + std::to_string(msc));
  if (fail_writes_ > 0 && !is_monitor_access(offset)) {
    --fail_writes_;
    return Error::make(EIO, "injected MSC write fault");
  }
  settle_locked();
  mscs_[msc]->write32(offset, value);
  return Ok();
}

Result<void> MpamMachine::set_cpu_label(unsigned cpu, MpamLabel label) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cpu >= cpu_label_.size()) return Error::make(EIO, "no CPU " + std::to_string(cpu));
  if (fail_writes_ > 0) {
    --fail_writes_;
    return Error::make(EIO, "injected MPAM1_EL1 write fault");
  }
  settle_locked();
  cpu_label_[cpu] = label;
  return Ok();
}

void MpamMachine::set_thread_label(int tid, MpamLabel label) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_locked();
  thread_label_[tid] = label;
}

void MpamMachine::forget_thread(int tid) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_locked();
  thread_label_.erase(tid);
  thread_work_.erase(tid);
  task_work_.erase(tid);
}

MpamLabel MpamMachine::cpu_label(unsigned cpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cpu < cpu_label_.size() ? cpu_label_[cpu] : MpamLabel{};
}

void MpamMachine::set_manual_clock(bool manual) {
  std::lock_guard<std::mutex> lock(mu_);
  if (manual == manual_) return;
  settle_locked();
  const uint64_t now = now_us_locked();
  manual_ = manual;
  if (manual) {
    manual_us_ = now;
  } else {
    // Real time continues from where the manual clock stood.
    start_ = std::chrono::steady_clock::now();
    manual_us_ = now;
  }
}

bool MpamMachine::manual_clock() const {
  std::lock_guard<std::mutex> lock(mu_);
  return manual_;
}

void MpamMachine::advance_ms(uint64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_locked();
  manual_us_ += ms * 1000;
  settle_locked();
}

uint64_t MpamMachine::now_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_us_locked() / 1000;
}

Result<void> MpamMachine::attach_thread_workload(int tid, const Workload& w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (w.cpu >= static_cast<int>(cpu_label_.size()))
    return Error::make(EINVAL, "no CPU " + std::to_string(w.cpu) + " on this platform");
  settle_locked();
  if (w.cache_footprint_bytes == 0 && w.bandwidth_mbps == 0)
    thread_work_.erase(tid);
  else
    thread_work_[tid] = w;
  return Ok();
}

Result<void> MpamMachine::attach_cpu_workload(unsigned cpu, const Workload& w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cpu >= cpu_label_.size())
    return Error::make(EINVAL, "no CPU " + std::to_string(cpu) + " on this platform");
  settle_locked();
  if (w.cache_footprint_bytes == 0 && w.bandwidth_mbps == 0)
    cpu_work_.erase(cpu);
  else
    cpu_work_[cpu] = w;
  return Ok();
}

void MpamMachine::set_task_activity(std::vector<std::pair<int, Workload>> activity) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_locked();
  task_work_.clear();
  for (auto& [tid, w] : activity) task_work_[tid] = std::move(w);
}

std::vector<int> MpamMachine::task_model_threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (const auto& [tid, l] : thread_label_)
    if (!(l == MpamLabel{}) && !thread_work_.count(tid)) out.push_back(tid);
  return out;
}

void MpamMachine::fail_next_writes(unsigned count, std::optional<unsigned> cpu) {
  (void)cpu;  // MSCs are not per CPU: any write counts
  std::lock_guard<std::mutex> lock(mu_);
  fail_writes_ = count;
}

std::vector<RegisterValue> MpamMachine::dump_registers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RegisterValue> out;
  for (size_t m = 0; m < mscs_.size(); ++m) {
    const MscModel& msc = *mscs_[m];
    const MscInfo& info = infos_[m];
    const char* cpor = info.level == 2 ? "l2_cpor" : "l3_cpor";
    // The MSC's first online CPU; a powered-down MSC shows nothing.
    auto first =
        std::find_if(info.cpus.begin(), info.cpus.end(), [&](unsigned c) { return online_[c]; });
    if (first == info.cpus.end()) continue;
    const unsigned cpu = *first;
    // PARTID 0 and every PARTID holding something other than its reset value.
    for (unsigned partid = 0; partid <= msc.params().partid_max; ++partid) {
      if (msc.params().cpbm_wd != 0) {
        const uint32_t v = msc.cpbm(static_cast<uint16_t>(partid));
        const uint32_t full =
            msc.params().cpbm_wd >= 32 ? 0xffffffffU : (1U << msc.params().cpbm_wd) - 1U;
        if (partid == 0 || v != full)
          out.push_back({cpu, partid, v, cpor, info.base + MPAMCFG_CPBM, 4});
      }
      if (msc.params().has_mbw_max) {
        const uint32_t v = msc.mbw_max(static_cast<uint16_t>(partid));
        const uint32_t top =
            msc.params().bwa_wd >= 16
                ? MPAMCFG_MBW_MAX_MAX
                : (MPAMCFG_MBW_MAX_MAX << (16 - msc.params().bwa_wd)) & MPAMCFG_MBW_MAX_MAX;
        if (partid == 0 || v != top)
          out.push_back({cpu, partid, v, "mbw_max", info.base + MPAMCFG_MBW_MAX, 4});
      }
    }
  }
  return out;
}

Result<void> MpamMachine::set_cpu_online(unsigned cpu, bool online) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cpu >= cpu_label_.size()) return Error::make(EINVAL, "no CPU " + std::to_string(cpu));
  if (online_[cpu] == online) return Ok();
  // The time before the change counts under the old state.
  settle_locked();
  online_[cpu] = online;
  // A CPU powers up with PARTID 0 / PMG 0, and its workload does not
  // survive it going down.
  cpu_label_[cpu] = MpamLabel{};
  if (online) return Ok();
  cpu_work_.erase(cpu);
  // An MSC whose last CPU went down loses its state (configuration and
  // monitors back to reset) and its cache its lines.
  for (size_t m = 0; m < infos_.size(); ++m) {
    const auto& mcpus = infos_[m].cpus;
    if (std::find(mcpus.begin(), mcpus.end(), cpu) == mcpus.end()) continue;
    if (std::any_of(mcpus.begin(), mcpus.end(), [&](unsigned c) { return online_[c]; })) continue;
    mscs_[m]->reset();
    if (msc_cache_[m] >= 0) caches_[static_cast<size_t>(msc_cache_[m])].occ.clear();
  }
  return Ok();
}

bool MpamMachine::cpu_online(unsigned cpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cpu < online_.size() && online_[cpu];
}

double MpamMachine::occupancy_bytes(size_t msc, uint16_t partid, uint8_t pmg) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_locked();
  if (msc >= msc_cache_.size() || msc_cache_[msc] < 0) return 0;
  const Cache& c = caches_[static_cast<size_t>(msc_cache_[msc])];
  auto it = c.occ.find(key(partid, pmg));
  return it == c.occ.end() ? 0 : it->second;
}

}  // namespace resctrlfs::hw::mpam

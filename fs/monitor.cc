// Implements monitoring (the Monitor part, and FsImpl::tick): mon_data reads (CTRL_MON groups
// summing their MON groups, Error/Unavailable/Unassigned), the RMID limbo worker and the MBM
// overflow worker driven by tick() every 1000 ms, the mba_MBps software controller, and ABMC
// counter assignment with mbm_L3_assignments (the kernel's Documentation/filesystems/resctrl.rst,
// "Info directory", "Resource monitoring rules" and "Memory bandwidth Allocation and monitoring").
#include <cerrno>
#include <climits>
#include <cstdio>

#include "fs/events.h"
#include "fs/file_rows.h"
#include "fs/impl.h"
#include "fs/kstr.h"

namespace resctrlfs::fs::internal {

using hw::EventId;

namespace {
constexpr auto kWorkerInterval = std::chrono::milliseconds(1000);
}  // namespace

Monitor::Monitor(Model& m, Tree& tree, IoChannels& io_ch) : Part(m), tree_(tree), io_ch_(io_ch) {
  // Global monitoring state lives as long as the machine: the kernel keeps
  // it from one mount to the next.
  const hw::PlatformInfo& info = m_.info;
  set_.threshold = info.res(hw::ResourceId::L3).mon.default_threshold;
  if (m_.mon_capable()) {
    std::vector<int> doms;
    for (const hw::MonDomain& d : info.res(hw::ResourceId::L3).mon.mon_domains)
      doms.push_back(d.id);
    // An RMID must be valid in every monitor resource (L3 and telemetry).
    // Index encode(0, 0) is the default group's.
    hw::Arch* arch = m_.arch;
    RmidPool::ClosidOf closid_of;
    if (info.rmid_depends_on_closid) {
      closid_of = [arch](uint32_t idx) { return arch->rmid_idx_decode(idx).first; };
      m_.threads.set_rmid_key(
          [arch](ThreadTags::Tags t) { return arch->rmid_idx_encode(t.first, t.second); });
    }
    set_.rmids.init(hw::num_rmid_idx(info), doms, m_.event_enabled(EventId::LLC_OCCUPANCY),
                    arch->rmid_idx_encode(0, 0), std::move(closid_of));
  }
  set_.event_filter_total = info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
  set_.event_filter_local = info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask & 0x15U;
  if (info.res(hw::ResourceId::L3).mon.cntr_assign.capable) {
    // Systems with counter assignment boot in mbm_event mode with
    // auto-assignment.
    if (m_.arch->set_cntr_assign_enabled(hw::ResourceId::L3, true).ok()) {
      set_.mbm_event_mode = true;
      set_.assign_on_mkdir = true;
    }
  }
}

uint32_t Monitor::mbps_target(int domain, uint32_t closid) const {
  auto it = mbps_target_.find({domain, closid});
  return it == mbps_target_.end() ? UINT32_MAX : it->second;
}

void Monitor::set_mbps_target(int domain, uint32_t closid, uint32_t mbps) {
  mbps_target_[{domain, closid}] = mbps;
}

void Monitor::forget_closid(uint32_t closid) {
  for (auto it = mbps_target_.begin(); it != mbps_target_.end();)
    it = it->first.second == closid ? mbps_target_.erase(it) : std::next(it);
}

void Monitor::forget_group(const Group* g) {
  mba_prev_bytes_.erase(mba_prev_bytes_.lower_bound({g, INT_MIN}),
                        mba_prev_bytes_.upper_bound({g, INT_MAX}));
}

void Monitor::reset_mount_state(bool mounting) {
  mbps_target_.clear();
  mba_prev_bytes_.clear();
  if (!mounting) return;
  cntr_owner_.clear();
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains)
    cntr_owner_[d.id].assign(m_.info.res(hw::ResourceId::L3).mon.cntr_assign.num_cntrs,
                             std::nullopt);
}

void Monitor::mon_domain_gone(int domain_id) {
  cntr_owner_.erase(domain_id);
  for (auto it = mba_prev_bytes_.begin(); it != mba_prev_bytes_.end();)
    it = it->first.second == domain_id ? mba_prev_bytes_.erase(it) : std::next(it);
}

void Monitor::mon_domain_back(int domain_id) {
  // A new domain has every counter free; no group has one assigned there.
  cntr_owner_[domain_id].assign(m_.info.res(hw::ResourceId::L3).mon.cntr_assign.num_cntrs,
                                std::nullopt);
}

void Monitor::mb_domain_gone(int domain_id) {
  for (auto it = mbps_target_.begin(); it != mbps_target_.end();)
    it = it->first.first == domain_id ? mbps_target_.erase(it) : std::next(it);
}

uint32_t Monitor::rmid_idx(uint32_t closid, uint32_t rmid) const {
  return m_.arch->rmid_idx_encode(closid, rmid);
}

Result<uint32_t> Monitor::alloc_rmid(uint32_t closid) {
  m_.assert_model_locked();
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t idx, set_.rmids.alloc(closid));
  return m_.arch->rmid_idx_decode(idx).second;
}

void Monitor::free_rmid(uint32_t closid, uint32_t rmid) {
  m_.assert_model_locked();
  if (!m_.mon_capable()) return;
  set_.rmids.free(rmid_idx(closid, rmid));  // the default group's index is ignored
}

bool Monitor::claim_rmid(uint32_t closid, uint32_t rmid) {
  m_.assert_model_locked();
  return set_.rmids.claim(rmid_idx(closid, rmid));
}

Result<uint32_t> Monitor::alloc_closid() {
  m_.assert_model_locked();
  if (!set_.rmids.depends_on_closid()) return m_.closids.alloc();
  return m_.closids.alloc_cleanest([this](uint32_t c) { return set_.rmids.dirty_count(c); });
}

EventRead Monitor::read_one(const Group* g, int domain, EventId ev) {
  m_.assert_command_locked();
  std::optional<unsigned> cntr;
  if (m_.is_mbm(ev) && set_.mbm_event_mode) {
    auto it = g->cntrs.find({domain, ev});
    if (it == g->cntrs.end()) return {ReadState::kUnassigned, 0};
    cntr = it->second;
  }
  // Real hardware counts only what the group's CPUs run (threads are not
  // retagged on context switch) and its I/O channels' device traffic; a
  // group with neither measures nothing. Its counter assignment above is
  // bookkeeping and still reads as the kernel's.
  if (m_.arch->thread_tagger() == nullptr && g->cpus.empty() && !io_ch_.has_channel(g))
    return {ReadState::kUnavailable, 0};
  const hw::ResourceId rid = hw::event_resource(ev);
  std::unique_ptr<hw::Arch::MonCtx> ctx = m_.arch->mon_ctx_alloc(rid, ev);
  hw::CounterValue v = m_.arch->read_counter(rid, domain, g->closid, g->rmid, ev, ctx.get(), cntr);
  switch (v.err) {
    case hw::ReadError::kError:
      return {ReadState::kError, 0};
    case hw::ReadError::kUnavailable:
      return {ReadState::kUnavailable, 0};
    case hw::ReadError::kNone:
      break;
  }
  return {ReadState::kValue, v.bytes};
}

namespace {

// A sum of reads as the kernel prints it: the total when any part read a
// value, otherwise the last part's failure (`failure` when there is none).
class ReadSum {
 public:
  explicit ReadSum(EventRead failure) : last_err_(failure) {}
  void add(const EventRead& r) {
    if (r.state == ReadState::kValue) {
      any_ok_ = true;
      sum_ += r.bytes;
    } else {
      last_err_ = r;
    }
  }
  EventRead result() const { return any_ok_ ? EventRead{ReadState::kValue, sum_} : last_err_; }

 private:
  bool any_ok_ = false;
  uint64_t sum_ = 0;
  EventRead last_err_;
};

}  // namespace

EventRead Monitor::read_group(const Group* g, int domain, EventId ev) {
  EventRead own = read_one(g, domain, ev);
  if (g->type != GroupType::kCtrlMon) return own;
  ReadSum sum(own);
  sum.add(own);
  for (const Group* m : g->mon_children) sum.add(read_one(m, domain, ev));
  return sum.result();
}

EventRead Monitor::read_group_l3_sum(const Group* g, int l3_id, EventId ev) {
  // Success if any node's read succeeded; otherwise the last failure.
  ReadSum sum({ReadState::kUnavailable, 0});
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    if (d.l3_id == l3_id) sum.add(read_group(g, d.id, ev));
  }
  return sum.result();
}

Result<std::string> Monitor::show_event_file(const Node& n) {
  EventRead r = n.mon_sum ? read_group_l3_sum(n.group, n.domain, n.event)
                          : read_group(n.group, n.domain, n.event);
  switch (r.state) {
    case ReadState::kError:
      return std::string("Error\n");
    case ReadState::kUnavailable:
      return std::string("Unavailable\n");
    case ReadState::kUnassigned:
      return std::string("Unassigned\n");
    case ReadState::kValue:
      break;
  }
  if (hw::event_is_floating_point(n.event)) {
    const unsigned bits = m_.info.res(hw::event_resource(n.event)).mon.binary_bits(n.event);
    return format_fixed_point(r.bytes, bits);
  }
  return std::to_string(r.bytes) + "\n";
}

void Monitor::reset_group_mbm(const Group* g) {
  m_.assert_command_locked();
  if (!m_.mon_capable()) return;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    for (const hw::MonEvent& ev : m_.info.res(hw::ResourceId::L3).mon.events) {
      if (m_.is_mbm(ev.id))
        m_.arch->reset_counter(hw::ResourceId::L3, d.id, g->closid, g->rmid, ev.id);
    }
  }
}

// ---------------------------------------------------------------------------
// ABMC counters

unsigned Monitor::free_cntrs(int domain) const {
  auto it = cntr_owner_.find(domain);
  if (it == cntr_owner_.end()) return 0;
  unsigned n = 0;
  for (const auto& o : it->second)
    if (!o) ++n;
  return n;
}

Result<void> Monitor::assign_cntr(Group* g, int domain, EventId ev) {
  m_.assert_command_locked();
  if (g->cntrs.count({domain, ev}) != 0) return Ok();
  auto& owners = cntr_owner_[domain];
  for (size_t id = 0; id < owners.size(); ++id) {
    if (owners[id]) continue;
    uint32_t cfg = ev == EventId::MBM_TOTAL ? set_.event_filter_total : set_.event_filter_local;
    Result<void> r = m_.arch->config_cntr(hw::ResourceId::L3, domain, static_cast<unsigned>(id),
                                          g->closid, g->rmid, ev, cfg, true);
    if (!r.ok()) return r;
    owners[id] = std::make_pair(g, ev);
    g->cntrs[{domain, ev}] = static_cast<unsigned>(id);
    return Ok();
  }
  return fail(ENOSPC, "Failed to allocate counter for " + std::string(event_name(ev)) +
                          " in domain " + std::to_string(domain) + "\n");
}

void Monitor::unassign_cntr(Group* g, int domain, EventId ev) {
  auto it = g->cntrs.find({domain, ev});
  if (it == g->cntrs.end()) return;
  unsigned id = it->second;
  (void)m_.arch->config_cntr(hw::ResourceId::L3, domain, id, g->closid, g->rmid, ev, 0, false);
  auto& owners = cntr_owner_[domain];
  if (id < owners.size()) owners[id].reset();
  g->cntrs.erase(it);
}

void Monitor::unassign_all_cntrs(Group* g) {
  auto copy = g->cntrs;
  for (auto& [key, id] : copy) unassign_cntr(g, key.first, key.second);
}

std::string Monitor::assign_cntrs_on_mkdir(Group* g) {
  std::string status;
  if (!set_.mbm_event_mode || !set_.assign_on_mkdir) return status;
  for (EventId ev : {EventId::MBM_TOTAL, EventId::MBM_LOCAL}) {
    if (!m_.event_enabled(ev)) continue;
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
      Result<void> r = assign_cntr(g, d.id, ev);
      if (!r.ok()) status += user_text(r.error());
    }
  }
  return status;
}

Result<void> Monitor::set_assign_mode(bool mbm_event) {
  m_.assert_command_locked();
  // Every counter is released, in every domain.
  for (auto& g : m_.groups) unassign_all_cntrs(g.get());
  RESCTRLFS_RETURN_IF_ERROR(m_.arch->set_cntr_assign_enabled(hw::ResourceId::L3, mbm_event));
  set_.mbm_event_mode = mbm_event;
  set_.event_filter_total = m_.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
  set_.event_filter_local = m_.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask & 0x15U;
  if (mbm_event) set_.assign_on_mkdir = true;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains)
    m_.arch->reset_all_counters(hw::ResourceId::L3, d.id);
  mba_prev_bytes_.clear();
  // The BMEC files appear or disappear with the mode.
  if (m_.mounted) {
    if (Node* m = m_.nodes.get(m_.info_mon_ino); m != nullptr && !m->removed)
      tree_.sync_file_rows(m, kInfo | kMon | kResCache | (m_.opts.debug ? uint32_t{kDebug} : 0U));
  }
  return Ok();
}

Result<std::string> Monitor::show_mbm_l3_assignments(const Node& n) {
  if (!set_.mbm_event_mode)
    return fail(EINVAL, "mbm_event counter assignment mode is not enabled\n");
  const Group* g = n.group;
  std::string out;
  for (EventId ev : {EventId::MBM_TOTAL, EventId::MBM_LOCAL}) {
    if (!m_.event_enabled(ev)) continue;
    out += event_name(ev);
    out += ':';
    bool sep = false;
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
      if (sep) out += ';';
      sep = true;
      out += std::to_string(d.id) + "=" + (g->cntrs.count({d.id, ev}) != 0 ? "e" : "_");
    }
    out += '\n';
  }
  return out;
}

Result<void> Monitor::write_mbm_l3_assignments(Node& n, std::string_view data, const Caller&) {
  Group* g = n.group;
  if (!set_.mbm_event_mode) return fail(EINVAL, "mbm_event mode is not enabled\n");
  std::optional<std::string_view> lines = kstr_cut(data);
  while (lines) {
    std::optional<std::string_view> line = kstr::strsep(lines, "\n");
    std::string_view event = kstr::strsep(line, ":");
    EventId ev = EventId::MBM_TOTAL;
    if (event == "mbm_total_bytes" && m_.event_enabled(EventId::MBM_TOTAL)) {
      ev = EventId::MBM_TOTAL;
    } else if (event == "mbm_local_bytes" && m_.event_enabled(EventId::MBM_LOCAL)) {
      ev = EventId::MBM_LOCAL;
    } else {
      return fail(ENOENT, "Invalid event " + std::string(event) + "\n");
    }
    while (line && !line->empty()) {
      std::optional<std::string_view> item = kstr::strim(kstr::strsep(line, ";"));
      std::string_view id_str = kstr::strsep(item, "=");
      std::string state = item ? std::string(*item) : std::string("(null)");
      auto op_failed = [&](const std::string& id) {
        return "Assign operation '" + std::string(event) + ":" + id + "=" + state + "' failed\n";
      };
      if (!id_str.empty() && id_str[0] == '*') {
        if (state != "e" && state != "_") return fail(EINVAL, op_failed("*"));
        // Every domain is tried; each failure adds its text.
        std::optional<Error> failed;
        for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
          if (state == "e") {
            Result<void> r = assign_cntr(g, d.id, ev);
            if (!r.ok()) {
              std::string text = failed ? failed->message : std::string();
              text += user_text(r.error());
              failed = fail(r.error().code, std::move(text));
            }
          } else {
            unassign_cntr(g, d.id, ev);
          }
        }
        if (failed) return fail(failed->code, failed->message + op_failed("*"));
        break;  // the rest of the line is ignored after '*'
      }
      uint64_t dom = 0;
      if (kstr::kstrtoul(id_str, 10, dom) != 0) return fail(EINVAL, "Missing domain id\n");
      bool found = false;
      for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains)
        found = found || static_cast<uint64_t>(d.id) == dom;
      if (!found) return fail(EINVAL, "Invalid domain id " + std::string(id_str) + "\n");
      if (state == "e") {
        Result<void> r = assign_cntr(g, static_cast<int>(dom), ev);
        if (!r.ok())
          return fail(r.error().code,
                      std::string(user_text(r.error())) + op_failed(std::to_string(dom)));
      } else if (state == "_") {
        unassign_cntr(g, static_cast<int>(dom), ev);
      } else {
        return fail(EINVAL, op_failed(std::to_string(dom)));
      }
    }
  }
  return Ok();
}

// ---------------------------------------------------------------------------
// Workers

void Monitor::limbo_pass() {
  m_.assert_command_locked();
  if (!m_.mon_capable()) return;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    if (!set_.rmids.has_busy(d.id)) continue;
    std::unique_ptr<hw::Arch::MonCtx> ctx =
        m_.arch->mon_ctx_alloc(hw::ResourceId::L3, EventId::LLC_OCCUPANCY);
    set_.rmids.check_limbo(d.id, [this, &ctx](int dom, uint32_t idx) {
      const auto [closid, rmid] = m_.arch->rmid_idx_decode(idx);
      hw::CounterValue v = m_.arch->read_counter(hw::ResourceId::L3, dom, closid, rmid,
                                                 EventId::LLC_OCCUPANCY, ctx.get());
      if (v.err != hw::ReadError::kNone) return true;
      return v.bytes >= set_.threshold;
    });
  }
}

void Monitor::overflow_pass(double elapsed_ms) {
  m_.assert_command_locked();
  if (!m_.mounted || !m_.mon_capable()) return;
  // Reading every MBM counter lets hw/ fold wrap-around into its totals.
  for (auto& g : m_.groups) {
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
      for (const hw::MonEvent& ev : m_.info.res(hw::ResourceId::L3).mon.events) {
        if (m_.is_mbm(ev.id)) (void)read_one(g.get(), d.id, ev.id);
      }
    }
  }
  if (!m_.opts.mba_mbps) return;
  // The software controller (mba_MBps), once per domain per interval.
  const hw::Resource& mb = m_.info.res(hw::ResourceId::MB);
  std::vector<hw::CtrlUpdate> updates;
  for (auto& gp : m_.groups) {
    Group* g = gp.get();
    if (g->type != GroupType::kCtrlMon) continue;
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
      EventRead r = read_group(g, d.id, g->mba_event);
      if (r.state != ReadState::kValue) continue;
      auto key = std::make_pair(static_cast<const Group*>(g), d.id);
      auto prev = mba_prev_bytes_.find(key);
      const bool have_prev = prev != mba_prev_bytes_.end();
      const uint64_t prev_bytes = have_prev ? prev->second : 0;
      mba_prev_bytes_[key] = r.bytes;
      if (!have_prev || r.bytes < prev_bytes || elapsed_ms <= 0) continue;
      double per_s = static_cast<double>(r.bytes - prev_bytes) * 1000.0 / elapsed_ms;
      uint64_t cur_bw = static_cast<uint64_t>(per_s / (1024.0 * 1024.0));
      auto t = mbps_target_.find({d.id, g->closid});
      uint64_t user_bw = t == mbps_target_.end() ? UINT32_MAX : t->second;
      uint32_t cur = m_.arch->get_ctrl(hw::ResourceId::MB, hw::ConfType::NONE, d.id, g->closid);
      uint32_t next = cur;
      if (cur > mb.membw.min_bw && user_bw < cur_bw) {
        next = cur - mb.membw.bw_gran;
      } else if (cur < mb.membw.max_bw && cur != 0 &&
                 user_bw > cur_bw * (cur + mb.membw.min_bw) / cur) {
        next = cur + mb.membw.bw_gran;
      }
      if (next != cur)
        updates.push_back({hw::ResourceId::MB, hw::ConfType::NONE, d.id, g->closid, next});
    }
  }
  if (!updates.empty()) (void)m_.arch->update_ctrls(updates);
}

void FsImpl::tick(std::chrono::steady_clock::time_point now) {
  CommandLock lock(*this);
  double elapsed_ms = 1000.0;
  if (m_.last_tick) {
    auto dt = now - *m_.last_tick;
    // Tolerate a little timer jitter; the kernel's workers are 1000 ms apart.
    if (dt < kWorkerInterval - std::chrono::milliseconds(50)) return;
    elapsed_ms = std::chrono::duration<double, std::milli>(dt).count();
  }
  m_.last_tick = now;
  // A rescan that failed (out of descriptors) is tried again.
  (void)p_.groups.rescan_if_pending();
  // Zombies no listing looked for are forgotten once reaped, so that the
  // table does not grow with them.
  p_.groups.forget_reaped();
  p_.mon.limbo_pass();
  p_.mon.overflow_pass(elapsed_ms);
}

// The row of group directories for counter assignment.
FileRows mon_group_file_rows() {
  static const FileRow kRows[] = {
      {.name = "mbm_L3_assignments",
       .mode = 0644,
       .flags = kBase | kMon,
       .show = show_fn<&Monitor::show_mbm_l3_assignments>,
       .write = write_fn<&Monitor::write_mbm_l3_assignments>,
       .cond = cond_fn<&Monitor::cond_abmc>,
       .read_status = true,
       .refuse_unlocked = refuse_no_newline,
       .changes = Changes::kGroup},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal

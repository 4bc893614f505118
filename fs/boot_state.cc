// Implements save_boot_state_json()/restore_boot_state_json() of FsImpl:
// the state the kernel keeps in memory from one mount to the next until the
// machine reboots (§6.4), so that a daemon started on the same mount point
// after an unmount behaves like a remount.
//
// Document (version 1):
//   {"version": 1, "max_threshold_occupancy": n, "max_name_width": n,
//    "mbm_assign_mode": "default"|"mbm_event", "mbm_assign_on_mkdir": bool,
//    "event_filter": {"mbm_total_bytes": m, "mbm_local_bytes": m},
//    "bmec": {"<mon domain>": [total config, local config]},
//    "rmids": {"free": [rmid, ...], "limbo": {"<mon domain>": [rmid, ...]}}}
#include <cerrno>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

namespace {

using nlohmann::json;

Error bad_boot(const std::string& why) { return Error::make(EINVAL, "boot state: " + why); }

// Longest schema name resctrl can have ("L3CODE", "L2DATA").
constexpr unsigned kMaxNameWidth = 6;

}  // namespace

std::string FsImpl::save_boot_state_json() {
  std::lock_guard<std::mutex> lock(mu_);
  json j;
  j["version"] = 1;
  j["max_threshold_occupancy"] = threshold_;
  j["max_name_width"] = max_name_width_;
  j["mbm_assign_mode"] = mbm_event_mode_ ? "mbm_event" : "default";
  j["mbm_assign_on_mkdir"] = assign_on_mkdir_;
  j["event_filter"] = {{"mbm_total_bytes", event_filter_total_},
                       {"mbm_local_bytes", event_filter_local_}};
  if (info_.mon.bmec) {
    json b = json::object();
    for (const hw::MonDomain& d : info_.mon.mon_domains)
      b[std::to_string(d.id)] = {arch_->event_config(d.id, hw::EventId::MBM_TOTAL),
                                 arch_->event_config(d.id, hw::EventId::MBM_LOCAL)};
    j["bmec"] = b;
  }
  if (rmids_.initialised()) {
    // The pool as an unmount now would leave it: every group's RMID freed
    // in the order unmount frees them (locksetup/locked groups hold none).
    RmidPool pool = rmids_;
    if (mounted_) {
      for (auto& g : groups_) {
        if (g.get() == root_ || g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
            g->mode == schemata::GroupMode::PSEUDO_LOCKED)
          continue;
        pool.free(g->rmid);
      }
    }
    json limbo = json::object();
    for (int d : pool.domains()) {
      std::vector<uint32_t> busy = pool.busy_in(d);
      if (!busy.empty()) limbo[std::to_string(d)] = busy;
    }
    j["rmids"] = {{"free", std::vector<uint32_t>(pool.free_list().begin(), pool.free_list().end())},
                  {"limbo", limbo}};
  }
  return j.dump();
}

Result<void> FsImpl::restore_boot_state_json(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mounted_) return Error::make(EBUSY, "boot state: mounted");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad_boot("not a JSON object");
  if (j.value("version", 0) != 1) return bad_boot("unknown version");
  try {
    // Validate everything first: nothing is applied from a bad document.
    const uint32_t thr = j.value("max_threshold_occupancy", threshold_);
    if (mon_capable() && thr > info_.mon.l3_cache_size_bytes)
      return bad_boot("max_threshold_occupancy beyond the cache size");
    const unsigned width = j.value("max_name_width", max_name_width_);
    if (width > kMaxNameWidth) return bad_boot("bad max_name_width");
    const bool want_event = j.value("mbm_assign_mode", std::string("default")) == "mbm_event";
    std::vector<uint32_t> free_order;
    std::map<int, std::set<uint32_t>> busy;
    const bool has_rmids = j.contains("rmids") && rmids_.initialised();
    if (has_rmids) {
      free_order = j["rmids"].at("free").get<std::vector<uint32_t>>();
      const json limbo = j["rmids"].value("limbo", json::object());
      for (auto& [dom, rmids] : limbo.items())
        busy[std::stoi(dom)] = rmids.get<std::set<uint32_t>>();
      RmidPool probe = rmids_;
      if (!probe.restore(free_order, busy)) return bad_boot("RMID lists do not fit");
    }

    if (has_rmids) (void)rmids_.restore(free_order, busy);
    if (mon_capable()) threshold_ = thr / info_.mon.occupancy_scale * info_.mon.occupancy_scale;
    max_name_width_ = std::max(max_name_width_, width);
    if (info_.mon.abmc && want_event != mbm_event_mode_)
      RESCTRLFS_RETURN_IF_ERROR(set_assign_mode(want_event));
    if (mbm_event_mode_) assign_on_mkdir_ = j.value("mbm_assign_on_mkdir", assign_on_mkdir_);
    if (j.contains("event_filter")) {
      const uint32_t mask = info_.mon.bmec_supported_mask;
      event_filter_total_ = j["event_filter"].value("mbm_total_bytes", event_filter_total_) & mask;
      event_filter_local_ = j["event_filter"].value("mbm_local_bytes", event_filter_local_) & mask;
    }
    if (info_.mon.bmec && j.contains("bmec")) {
      const uint32_t mask = info_.mon.bmec_supported_mask;
      for (const hw::MonDomain& d : info_.mon.mon_domains) {
        const std::string key = std::to_string(d.id);
        if (!j["bmec"].contains(key)) continue;
        const json& v = j["bmec"][key];
        const hw::EventId evs[2] = {hw::EventId::MBM_TOTAL, hw::EventId::MBM_LOCAL};
        for (int i = 0; i < 2; ++i) {
          const uint32_t cfg = v.at(i).get<uint32_t>() & mask;
          if (cfg != 0 && cfg != arch_->event_config(d.id, evs[i]))
            RESCTRLFS_RETURN_IF_ERROR(arch_->set_event_config(d.id, evs[i], cfg));
        }
      }
    }
  } catch (const std::exception& e) {  // json's, and std::stoi's on a bad domain key
    return bad_boot(e.what());
  }
  return Ok();
}

}  // namespace resctrlfs::fs::internal

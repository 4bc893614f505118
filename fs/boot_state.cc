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
#include <charconv>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "base/json_input.h"
#include "fs/impl.h"

namespace resctrlfs::fs::internal {

namespace {

using nlohmann::json;

Error bad_boot(const std::string& why) { return Error::make(EINVAL, "boot state: " + why); }
Error bad(const std::string& why) { return Error::make(EINVAL, why); }

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
  // The file is outside input: typed access only (base/json_input.h); the
  // try is the last guard of that rule.
  Result<void> r = Ok();
  try {
    r = restore_boot_state_locked(text);
  } catch (const std::exception& e) {
    r = Error::make(EINVAL, e.what());
  }
  if (!r.ok()) return bad_boot(r.error().message);
  return r;
}

Result<void> FsImpl::restore_boot_state_locked(const std::string& text) {
  Result<json> parsed = parse_json(text);
  if (!parsed.ok()) return bad("not JSON: " + parsed.error().message);
  const JsonIn j(*parsed);
  if (!j.json().is_object()) return bad("not a JSON object");
  if (Result<int> v = j.int_or<int>("version", 0); !v.ok() || *v != 1)
    return bad("unknown version");

  // Read and check everything first: nothing is applied from a bad document.
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t thr,
                             j.int_or<uint32_t>("max_threshold_occupancy", threshold_));
  if (mon_capable() && thr > info_.mon.l3_cache_size_bytes)
    return bad("max_threshold_occupancy beyond the cache size");
  RESCTRLFS_ASSIGN_OR_RETURN(const unsigned width,
                             j.int_or<unsigned>("max_name_width", max_name_width_));
  if (width > kMaxNameWidth) return bad("bad max_name_width");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode, j.string_or("mbm_assign_mode", "default"));
  if (mode != "default" && mode != "mbm_event") return bad("bad mbm_assign_mode");
  const bool want_event = mode == "mbm_event";
  RESCTRLFS_ASSIGN_OR_RETURN(const bool on_mkdir,
                             j.bool_or("mbm_assign_on_mkdir", assign_on_mkdir_));
  uint32_t filter_total = event_filter_total_, filter_local = event_filter_local_;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> ef, j.find("event_filter"));
  if (ef) {
    RESCTRLFS_ASSIGN_OR_RETURN(filter_total,
                               ef->int_or<uint32_t>("mbm_total_bytes", event_filter_total_));
    RESCTRLFS_ASSIGN_OR_RETURN(filter_local,
                               ef->int_or<uint32_t>("mbm_local_bytes", event_filter_local_));
  }
  // (domain, event) -> configuration.
  std::vector<std::tuple<int, hw::EventId, uint32_t>> bmec;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> bm, j.find("bmec"));
  if (bm && !bm->json().is_object()) return bm->error("must be an object");
  if (info_.mon.bmec && bm) {
    const uint32_t mask = info_.mon.bmec_supported_mask;
    for (const hw::MonDomain& d : info_.mon.mon_domains) {
      RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> v, bm->find(std::to_string(d.id)));
      if (!v) continue;
      RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> cfgs, v->elements());
      if (cfgs.size() != 2) return bad(v->path() + ": must be [total, local]");
      const hw::EventId evs[2] = {hw::EventId::MBM_TOTAL, hw::EventId::MBM_LOCAL};
      for (int i = 0; i < 2; ++i) {
        RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t cfg, cfgs[i].as_int<uint32_t>());
        bmec.emplace_back(d.id, evs[i], cfg & mask);
      }
    }
  }
  std::vector<uint32_t> free_order;
  std::map<int, std::set<uint32_t>> busy;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> rm, j.find("rmids"));
  const bool has_rmids = rm.has_value() && rmids_.initialised();
  if (has_rmids) {
    RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn free_list, rm->get("free"));
    RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> frees, free_list.elements());
    for (const JsonIn& f : frees) {
      RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t r, f.as_int<uint32_t>());
      free_order.push_back(r);
    }
    RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> limbo, rm->find("limbo"));
    if (limbo) {
      RESCTRLFS_ASSIGN_OR_RETURN(const auto doms, limbo->members());
      for (const auto& [key, rmids] : doms) {
        int dom = -1;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), dom);
        if (key.empty() || ec != std::errc() || end != key.data() + key.size() || dom < 0)
          return bad("bad domain key \"" + key + "\"");
        RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> list, rmids.elements());
        for (const JsonIn& r : list) {
          RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t rmid, r.as_int<uint32_t>());
          busy[dom].insert(rmid);
        }
      }
    }
    RmidPool probe = rmids_;
    if (!probe.restore(free_order, busy)) return bad("RMID lists do not fit");
  }

  if (has_rmids) (void)rmids_.restore(free_order, busy);
  if (mon_capable()) threshold_ = thr / info_.mon.occupancy_scale * info_.mon.occupancy_scale;
  max_name_width_ = std::max(max_name_width_, width);
  if (info_.mon.abmc && want_event != mbm_event_mode_)
    RESCTRLFS_RETURN_IF_ERROR(set_assign_mode(want_event));
  if (mbm_event_mode_) assign_on_mkdir_ = on_mkdir;
  const uint32_t mask = info_.mon.bmec_supported_mask;
  event_filter_total_ = filter_total & mask;
  event_filter_local_ = filter_local & mask;
  for (const auto& [dom, ev, cfg] : bmec) {
    if (cfg != 0 && cfg != arch_->event_config(dom, ev))
      RESCTRLFS_RETURN_IF_ERROR(arch_->set_event_config(dom, ev, cfg));
  }
  return Ok();
}

}  // namespace resctrlfs::fs::internal

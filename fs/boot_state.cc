// Implements save_boot_state_json()/restore_boot_state_json() of FsImpl:
// the state the kernel keeps in memory from one mount to the next until the
// machine reboots (the kernel frees none of it on unmount), so that a
// daemon started on the same mount point after an unmount behaves like a
// remount.
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

Error bad_boot(const std::string& why) { return Error::log_only(EINVAL, "boot state: " + why); }
Error bad(const std::string& why) { return Error::log_only(EINVAL, why); }

// Longest schema name resctrl can have ("L3CODE", "L2DATA").
constexpr unsigned kMaxNameWidth = 6;

// The BMEC configurations of the document's "bmec" (domain -> [total,
// local]) for the domains the machine has: (domain, event, configuration).
using BmecConfigs = std::vector<std::tuple<int, hw::EventId, uint32_t>>;
Result<BmecConfigs> read_bmec(const JsonIn& j, const hw::PlatformInfo& info) {
  BmecConfigs bmec;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> bm, j.find("bmec"));
  if (bm && !bm->json().is_object()) return bm->error("must be an object");
  if (info.res(hw::ResourceId::L3).mon.evt_cfg.capable && bm) {
    const uint32_t mask = info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
    for (const hw::MonDomain& d : info.res(hw::ResourceId::L3).mon.mon_domains) {
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
  return bmec;
}

// The RMID free list and limbo marks of the document's "rmids".
Result<void> read_rmid_lists(const JsonIn& rm, std::vector<uint32_t>& free_order,
                             std::map<int, std::set<uint32_t>>& busy) {
  RESCTRLFS_ASSIGN_OR_RETURN(const JsonIn free_list, rm.get("free"));
  RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> frees, free_list.elements());
  for (const JsonIn& f : frees) {
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t r, f.as_int<uint32_t>());
    free_order.push_back(r);
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> limbo, rm.find("limbo"));
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
  return Ok();
}

}  // namespace

std::string FsImpl::save_boot_state_json() {
  std::lock_guard<std::mutex> lock(mu_);
  json j;
  j["version"] = 1;
  j["max_threshold_occupancy"] = p_.mon.settings().threshold;
  j["max_name_width"] = m_.max_name_width;
  j["mbm_assign_mode"] = p_.mon.mbm_event_mode() ? "mbm_event" : "default";
  j["mbm_assign_on_mkdir"] = p_.mon.settings().assign_on_mkdir;
  j["event_filter"] = {{"mbm_total_bytes", p_.mon.settings().event_filter_total},
                       {"mbm_local_bytes", p_.mon.settings().event_filter_local}};
  if (m_.info.res(hw::ResourceId::L3).mon.evt_cfg.capable) {
    json b = json::object();
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains)
      b[std::to_string(d.id)] = {
          m_.arch->event_config(hw::ResourceId::L3, d.id, hw::EventId::MBM_TOTAL),
          m_.arch->event_config(hw::ResourceId::L3, d.id, hw::EventId::MBM_LOCAL)};
    j["bmec"] = b;
  }
  std::string doc = j.dump();
  if (p_.mon.rmids().initialised()) {
    // Counted groups: every group's RMID but the default group's and
    // those of locksetup/locked groups (which hold none).
    auto counted = [this](const Group& g) {
      return &g != m_.root && g.mode != schemata::GroupMode::PSEUDO_LOCKSETUP &&
             g.mode != schemata::GroupMode::PSEUDO_LOCKED;
    };
    // The pool as an unmount now would leave it: every group's RMID freed
    // in the order unmount frees them.
    std::vector<uint32_t> held;
    if (m_.mounted) {
      for (auto& g : m_.groups)
        if (counted(*g)) held.push_back(g->rmid);
    }
    std::vector<uint32_t> key;
    key.reserve(boot_rmids_key_.size());
    p_.mon.rmids().append_state(key);
    key.push_back(m_.mounted ? 1 : 0);
    key.insert(key.end(), held.begin(), held.end());
    if (key != boot_rmids_key_ || boot_rmids_text_.empty()) {
      const RmidPool::Released after = p_.mon.rmids().after_freeing(held);
      auto write_list = [](const std::vector<uint32_t>& ids, std::string& out) {
        out += '[';
        char buf[16];
        for (size_t i = 0; i < ids.size(); ++i) {
          if (i != 0) out += ',';
          auto r = std::to_chars(buf, buf + sizeof(buf), ids[i]);
          out.append(buf, r.ptr);
        }
        out += ']';
      };
      std::string& text = boot_rmids_text_;
      text.clear();
      text += "{\"free\":";
      write_list(after.free, text);
      text += ",\"limbo\":{";
      bool first = true;
      for (const auto& [d, ids] : after.limbo) {
        if (!first) text += ',';
        first = false;
        text += '"';
        text += std::to_string(d);
        text += "\":";
        write_list(ids, text);
      }
      text += "}}";
      boot_rmids_key_ = std::move(key);
    }
    // `doc` is an object ("version" at least): "rmids" goes in before its
    // closing brace.
    doc.pop_back();
    doc += ",\"rmids\":";
    doc += boot_rmids_text_;
    doc += '}';
  }
  return doc;
}

Result<void> FsImpl::restore_boot_state_json(const std::string& text) {
  CommandLock lock(*this);
  if (m_.mounted) return Error::log_only(EBUSY, "boot state: mounted");
  // The file is outside input: typed access only (base/json_input.h); the
  // try is the last guard of that rule.
  Result<void> r = Ok();
  try {
    r = restore_boot_state_locked(text);
  } catch (const std::exception& e) {
    r = Error::log_only(EINVAL, e.what());
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
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t thr, j.int_or<uint32_t>("max_threshold_occupancy",
                                                                    p_.mon.settings().threshold));
  if (m_.mon_capable() && thr > m_.info.res(hw::ResourceId::L3).mon.realloc_limit_bytes)
    return bad("max_threshold_occupancy beyond the cache size");
  RESCTRLFS_ASSIGN_OR_RETURN(const unsigned width,
                             j.int_or<unsigned>("max_name_width", m_.max_name_width));
  if (width > kMaxNameWidth) return bad("bad max_name_width");
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode, j.string_or("mbm_assign_mode", "default"));
  if (mode != "default" && mode != "mbm_event") return bad("bad mbm_assign_mode");
  const bool want_event = mode == "mbm_event";
  RESCTRLFS_ASSIGN_OR_RETURN(const bool on_mkdir,
                             j.bool_or("mbm_assign_on_mkdir", p_.mon.settings().assign_on_mkdir));
  uint32_t filter_total = p_.mon.settings().event_filter_total,
           filter_local = p_.mon.settings().event_filter_local;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> ef, j.find("event_filter"));
  if (ef) {
    RESCTRLFS_ASSIGN_OR_RETURN(
        filter_total,
        ef->int_or<uint32_t>("mbm_total_bytes", p_.mon.settings().event_filter_total));
    RESCTRLFS_ASSIGN_OR_RETURN(
        filter_local,
        ef->int_or<uint32_t>("mbm_local_bytes", p_.mon.settings().event_filter_local));
  }
  RESCTRLFS_ASSIGN_OR_RETURN(const BmecConfigs bmec, read_bmec(j, m_.info));
  std::vector<uint32_t> free_order;
  std::map<int, std::set<uint32_t>> busy;
  RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> rm, j.find("rmids"));
  const bool has_rmids = rm.has_value() && p_.mon.rmids().initialised();
  if (has_rmids) {
    RESCTRLFS_RETURN_IF_ERROR(read_rmid_lists(*rm, free_order, busy));
    RmidPool probe = p_.mon.rmids();
    if (!probe.restore(free_order, busy)) return bad("RMID lists do not fit");
  }

  if (has_rmids) (void)p_.mon.rmids().restore(free_order, busy);
  if (m_.mon_capable())
    p_.mon.settings().threshold = thr / m_.info.res(hw::ResourceId::L3).mon.occupancy_scale *
                                  m_.info.res(hw::ResourceId::L3).mon.occupancy_scale;
  m_.max_name_width = std::max(m_.max_name_width, width);
  if (m_.info.res(hw::ResourceId::L3).mon.cntr_assign.capable &&
      want_event != p_.mon.mbm_event_mode())
    RESCTRLFS_RETURN_IF_ERROR(p_.mon.set_assign_mode(want_event));
  if (p_.mon.mbm_event_mode()) p_.mon.settings().assign_on_mkdir = on_mkdir;
  const uint32_t mask = m_.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
  p_.mon.settings().event_filter_total = filter_total & mask;
  p_.mon.settings().event_filter_local = filter_local & mask;
  for (const auto& [dom, ev, cfg] : bmec) {
    if (cfg != 0 && cfg != m_.arch->event_config(hw::ResourceId::L3, dom, ev))
      RESCTRLFS_RETURN_IF_ERROR(m_.arch->set_event_config(hw::ResourceId::L3, dom, ev, cfg));
  }
  return Ok();
}

}  // namespace resctrlfs::fs::internal

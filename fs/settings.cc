// Implements the settings table (settings.h): one row per setting that
// survives an unmount, next to the code that gets, checks and applies it.
#include "fs/settings.h"

#include <algorithm>
#include <string>

namespace resctrlfs::fs::internal {

namespace {

using nlohmann::json;

// Longest schema name resctrl can have ("L3CODE", "L2DATA").
constexpr unsigned kMaxNameWidth = 6;

// max_threshold_occupancy: bytes, at most the L3's size; kept rounded down
// to the occupancy scale as a write of the file leaves it.
json get_threshold(const Model&, Parts& p) { return p.mon.settings().threshold; }
Result<json> check_threshold(const Model& m, Parts&, const JsonIn& v) {
  RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t thr, v.as_int<uint32_t>());
  if (m.mon_capable() && thr > m.info.res(hw::ResourceId::L3).mon.realloc_limit_bytes)
    return v.error("beyond the L3 cache size (" +
                   std::to_string(m.info.res(hw::ResourceId::L3).mon.realloc_limit_bytes) +
                   " bytes)");
  return json(thr);
}
Result<void> apply_threshold(Model& m, Parts& p, const json& v) {
  if (!m.mon_capable()) return Ok();
  const uint32_t scale = m.info.res(hw::ResourceId::L3).mon.occupancy_scale == 0
                             ? 1
                             : m.info.res(hw::ResourceId::L3).mon.occupancy_scale;
  p.mon.settings().threshold = v.get<uint32_t>() / scale * scale;
  return Ok();
}

// The widest schema name shown so far: schemata lines keep their padding
// from one mount to the next (the kernel's max_name_width only grows).
json get_name_width(const Model& m, Parts&) { return m.max_name_width; }
Result<json> check_name_width(const Model&, Parts&, const JsonIn& v) {
  RESCTRLFS_ASSIGN_OR_RETURN(const unsigned width, v.as_int<unsigned>());
  if (width > kMaxNameWidth) return v.error("beyond " + std::to_string(kMaxNameWidth));
  return json(width);
}
Result<void> apply_name_width(Model& m, Parts&, const json& v) {
  m.max_name_width = std::max(m.max_name_width, v.get<unsigned>());
  return Ok();
}

// mbm_assign_mode: "default" or "mbm_event"; switched only where ABMC is.
json get_assign_mode(const Model&, Parts& p) {
  return p.mon.mbm_event_mode() ? "mbm_event" : "default";
}
Result<json> check_assign_mode(const Model&, Parts&, const JsonIn& v) {
  RESCTRLFS_ASSIGN_OR_RETURN(const std::string mode, v.as_string());
  if (mode != "default" && mode != "mbm_event")
    return v.error("must be \"default\" or \"mbm_event\"");
  return json(mode == "mbm_event");
}
Result<void> apply_assign_mode(Model& m, Parts& p, const json& v) {
  const bool want_event = v.get<bool>();
  if (m.info.res(hw::ResourceId::L3).mon.cntr_assign.capable &&
      want_event != p.mon.mbm_event_mode())
    RESCTRLFS_RETURN_IF_ERROR(p.mon.set_assign_mode(want_event));
  return Ok();
}

// mbm_assign_on_mkdir: meaningful in mbm_event mode only (a switch to it
// sets it).
json get_on_mkdir(const Model&, Parts& p) { return p.mon.settings().assign_on_mkdir; }
Result<json> check_on_mkdir(const Model&, Parts&, const JsonIn& v) {
  RESCTRLFS_ASSIGN_OR_RETURN(const bool on, v.as_bool());
  return json(on);
}
Result<void> apply_on_mkdir(Model&, Parts& p, const json& v) {
  if (p.mon.mbm_event_mode()) p.mon.settings().assign_on_mkdir = v.get<bool>();
  return Ok();
}

// event_configs/<event>/event_filter: {"mbm_total_bytes": m, "mbm_local_bytes":
// m}, each within what the machine supports; a missing one keeps its value.
json get_event_filter(const Model&, Parts& p) {
  return {{"mbm_total_bytes", p.mon.settings().event_filter_total},
          {"mbm_local_bytes", p.mon.settings().event_filter_local}};
}
Result<json> check_event_filter(const Model&, Parts& p, const JsonIn& v) {
  RESCTRLFS_ASSIGN_OR_RETURN(
      const uint32_t total,
      v.int_or<uint32_t>("mbm_total_bytes", p.mon.settings().event_filter_total));
  RESCTRLFS_ASSIGN_OR_RETURN(
      const uint32_t local,
      v.int_or<uint32_t>("mbm_local_bytes", p.mon.settings().event_filter_local));
  return json::array({total, local});
}
Result<void> apply_event_filter(Model& m, Parts& p, const json& v) {
  const uint32_t mask = m.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
  p.mon.settings().event_filter_total = v[0].get<uint32_t>() & mask;
  p.mon.settings().event_filter_local = v[1].get<uint32_t>() & mask;
  return Ok();
}

// The BMEC configurations, which live in the hardware: {"<mon domain>":
// [total config, local config]}, for the domains the machine has.
bool has_bmec(const Model& m) { return m.info.res(hw::ResourceId::L3).mon.evt_cfg.capable; }
json get_bmec(const Model& m, Parts&) {
  json b = json::object();
  for (const hw::MonDomain& d : m.info.res(hw::ResourceId::L3).mon.mon_domains)
    b[std::to_string(d.id)] = {
        m.arch->event_config(hw::ResourceId::L3, d.id, hw::EventId::MBM_TOTAL),
        m.arch->event_config(hw::ResourceId::L3, d.id, hw::EventId::MBM_LOCAL)};
  return b;
}
// Checked: [[domain, total config, local config], ...].
Result<json> check_bmec(const Model& m, Parts&, const JsonIn& v) {
  if (!v.json().is_object()) return v.error("must be an object");
  json out = json::array();
  if (!m.info.res(hw::ResourceId::L3).mon.evt_cfg.capable) return out;
  const uint32_t mask = m.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
  for (const hw::MonDomain& d : m.info.res(hw::ResourceId::L3).mon.mon_domains) {
    RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> dv, v.find(std::to_string(d.id)));
    if (!dv) continue;
    RESCTRLFS_ASSIGN_OR_RETURN(const std::vector<JsonIn> cfgs, dv->elements());
    if (cfgs.size() != 2) return dv->error("must be [total, local]");
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t total, cfgs[0].as_int<uint32_t>());
    RESCTRLFS_ASSIGN_OR_RETURN(const uint32_t local, cfgs[1].as_int<uint32_t>());
    out.push_back({d.id, total & mask, local & mask});
  }
  return out;
}
Result<void> apply_bmec(Model& m, Parts&, const json& v) {
  for (const json& d : v) {
    const int dom = d[0].get<int>();
    const hw::EventId evs[2] = {hw::EventId::MBM_TOTAL, hw::EventId::MBM_LOCAL};
    for (int i = 0; i < 2; ++i) {
      const uint32_t cfg = d[i + 1].get<uint32_t>();
      if (cfg != 0 && cfg != m.arch->event_config(hw::ResourceId::L3, dom, evs[i]))
        RESCTRLFS_RETURN_IF_ERROR(m.arch->set_event_config(hw::ResourceId::L3, dom, evs[i], cfg));
    }
  }
  return Ok();
}

constexpr uint8_t kJournalAndBoot = kInJournal | kInBootState;

const Setting kSettings[] = {
    {"max_threshold_occupancy", kJournalAndBoot | kInStatus, get_threshold, check_threshold,
     apply_threshold},
    {"max_name_width", kInBootState, get_name_width, check_name_width, apply_name_width},
    // The mode before what a switch of it resets.
    {"mbm_assign_mode", kJournalAndBoot | kInStatus, get_assign_mode, check_assign_mode,
     apply_assign_mode},
    {"mbm_assign_on_mkdir", kJournalAndBoot, get_on_mkdir, check_on_mkdir, apply_on_mkdir},
    {"event_filter", kJournalAndBoot, get_event_filter, check_event_filter, apply_event_filter},
    {"bmec", kInBootState, get_bmec, check_bmec, apply_bmec, has_bmec},
};

}  // namespace

std::span<const Setting> settings_table() { return kSettings; }

void get_settings(const Model& m, Parts& p, SettingDoc doc, json& out) {
  for (const Setting& s : kSettings) {
    if ((s.docs & doc) == 0 || (s.present != nullptr && !s.present(m))) continue;
    out[s.key] = s.get(m, p);
  }
}

Result<CheckedSettings> check_settings(const Model& m, Parts& p, SettingDoc doc, const JsonIn& in) {
  CheckedSettings out;
  for (const Setting& s : kSettings) {
    if ((s.docs & doc) == 0) continue;
    RESCTRLFS_ASSIGN_OR_RETURN(const std::optional<JsonIn> v, in.find(s.key));
    if (!v) continue;
    RESCTRLFS_ASSIGN_OR_RETURN(json checked, s.check(m, p, *v));
    out.emplace_back(&s, std::move(checked));
  }
  return out;
}

Result<void> apply_settings(Model& m, Parts& p, const CheckedSettings& checked) {
  for (const auto& [s, v] : checked) RESCTRLFS_RETURN_IF_ERROR(s->apply(m, p, v));
  return Ok();
}

}  // namespace resctrlfs::fs::internal

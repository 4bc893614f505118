// Implements the monitoring info files (the Monitor part): info/L3_MON's
// num_rmids, mon_features, max_threshold_occupancy, the BMEC configs
// (mbm_total_bytes_config, mbm_local_bytes_config), the ABMC files
// (mbm_assign_mode, num_mbm_cntrs, available_mbm_cntrs, mbm_assign_on_mkdir,
// event_configs/<event>/event_filter), and info/PERF_PKG_MON's: the kernel's
// Documentation/filesystems/resctrl.rst, "Info directory".
#include <cerrno>
#include <cstdio>

#include "fs/events.h"
#include "fs/file_rows.h"
#include "fs/kstr.h"
#include "fs/parts.h"

namespace resctrlfs::fs::internal {

using hw::EventId;

namespace {

std::string u(uint64_t v) { return std::to_string(v) + "\n"; }

// event_filter transaction names, in bit order.
constexpr const char* kTransactions[] = {"local_reads",
                                         "remote_reads",
                                         "local_non_temporal_writes",
                                         "remote_non_temporal_writes",
                                         "local_reads_slow_memory",
                                         "remote_reads_slow_memory",
                                         "dirty_victim_writes_all"};

constexpr const char* kNotEnabled = "mbm_event counter assignment mode is not enabled\n";

}  // namespace

bool Monitor::cond_bmec_total() const {
  return m_.info.res(hw::ResourceId::L3).mon.evt_cfg.capable &&
         m_.event_enabled(EventId::MBM_TOTAL) && !set_.mbm_event_mode;
}

bool Monitor::cond_bmec_local() const {
  return m_.info.res(hw::ResourceId::L3).mon.evt_cfg.capable &&
         m_.event_enabled(EventId::MBM_LOCAL) && !set_.mbm_event_mode;
}

Result<std::string> Monitor::show_num_rmids(const Node& n) {
  return u(m_.info.res(n.mon_rid).mon.num_rmids);
}

Result<std::string> Monitor::show_mon_features(const Node& n) {
  const hw::MonCaps& mon = m_.info.res(n.mon_rid).mon;
  std::string out;
  for (const hw::MonEvent& ev : mon.events) {
    out += event_name(ev.id);
    out += '\n';
    if (mon.evt_cfg.capable && m_.is_mbm(ev.id) && !set_.mbm_event_mode) {
      out += event_name(ev.id);
      out += "_config\n";
    }
  }
  return out;
}

Result<std::string> Monitor::show_max_threshold_occupancy(const Node&) { return u(set_.threshold); }

Result<void> Monitor::write_max_threshold_occupancy(Node&, std::string_view data, const Caller&) {
  uint32_t bytes = 0;
  if (int rc = kstr::kstrtouint(kstr::c_string(data), 0, bytes); rc != 0)
    return fail(-rc, "max_threshold_occupancy: Invalid input\n");
  if (bytes > m_.info.res(hw::ResourceId::L3).mon.realloc_limit_bytes)
    return fail(EINVAL,
                "max_threshold_occupancy: Exceeds limit (before adjustment) of " +
                    std::to_string(m_.info.res(hw::ResourceId::L3).mon.realloc_limit_bytes) +
                    " bytes\n");
  const uint32_t scale = m_.info.res(hw::ResourceId::L3).mon.occupancy_scale == 0
                             ? 1
                             : m_.info.res(hw::ResourceId::L3).mon.occupancy_scale;
  set_.threshold = bytes / scale * scale;
  return Ok();
}

// ---------------------------------------------------------------------------
// BMEC: mbm_total_bytes_config, mbm_local_bytes_config

Result<std::string> Monitor::show_bmec(EventId ev) const {
  std::string out;
  bool sep = false;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    if (sep) out += ';';
    sep = true;
    char b[32];
    std::snprintf(b, sizeof(b), "%d=0x%02x", d.id,
                  m_.arch->event_config(hw::ResourceId::L3, d.id, ev));
    out += b;
  }
  out += '\n';
  return out;
}

Result<std::string> Monitor::show_mbm_total_config(const Node&) {
  return show_bmec(EventId::MBM_TOTAL);
}

Result<std::string> Monitor::show_mbm_local_config(const Node&) {
  return show_bmec(EventId::MBM_LOCAL);
}

Result<void> Monitor::write_mbm_total_config(Node& n, std::string_view data, const Caller&) {
  return write_bmec(n, data, EventId::MBM_TOTAL);
}

Result<void> Monitor::write_mbm_local_config(Node& n, std::string_view data, const Caller&) {
  return write_bmec(n, data, EventId::MBM_LOCAL);
}

Result<void> Monitor::write_bmec(Node&, std::string_view data, EventId ev) {
  if (data.empty() || data.back() != '\n')
    return fail(EINVAL, std::string(event_name(ev)) + "_config: Invalid input\n");
  std::optional<std::string_view> tok = kstr_cut(data);
  // Items are applied one by one as they are parsed (no rollback).
  for (;;) {
    if (!tok || tok->empty()) return Ok();
    std::optional<std::string_view> dom_str = kstr::strim(kstr::strsep(tok, ";"));
    std::string_view id_str = kstr::strsep(dom_str, "=");
    uint64_t dom_id = 0, val = 0;
    if (kstr::kstrtoul(id_str, 10, dom_id) != 0)
      return fail(EINVAL, "Missing '=' or non-numeric domain id\n");
    if (!dom_str || kstr::kstrtoul(*dom_str, 16, val) != 0)
      return fail(EINVAL, "Non-numeric event configuration value\n");
    const uint32_t mask = m_.info.res(hw::ResourceId::L3).mon.evt_cfg.supported_mask;
    if ((val & mask) != val) {
      char b[96];
      std::snprintf(b, sizeof(b), "Invalid event configuration: max valid mask is 0x%02x\n", mask);
      return fail(EINVAL, b);
    }
    bool found = false;
    for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
      if (static_cast<uint64_t>(d.id) != dom_id) continue;
      found = true;
      if (m_.arch->event_config(hw::ResourceId::L3, d.id, ev) != val) {
        Result<void> r =
            m_.arch->set_event_config(hw::ResourceId::L3, d.id, ev, static_cast<uint32_t>(val));
        if (!r.ok()) return fail(r.error().code, std::string(user_text(r.error())));
      }
    }
    if (!found) return Error::make(EINVAL);
  }
}

// ---------------------------------------------------------------------------
// ABMC info files: mbm_assign_mode, num_mbm_cntrs, available_mbm_cntrs,
// mbm_assign_on_mkdir, event_filter

Result<std::string> Monitor::show_mbm_assign_mode(const Node&) {
  if (!m_.info.res(hw::ResourceId::L3).mon.cntr_assign.capable) return std::string("[default]\n");
  return std::string(set_.mbm_event_mode ? "[mbm_event]\ndefault\n" : "[default]\nmbm_event\n");
}

Result<void> Monitor::write_mbm_assign_mode(Node&, std::string_view data, const Caller&) {
  std::string_view buf = kstr_cut(data);
  bool enable = false;
  if (buf == "default") {
    enable = false;
  } else if (buf == "mbm_event") {
    if (!m_.info.res(hw::ResourceId::L3).mon.cntr_assign.capable)
      return fail(EINVAL, "mbm_event mode is not supported\n");
    enable = true;
  } else {
    return fail(EINVAL, "Unsupported assign mode\n");
  }
  if (enable == set_.mbm_event_mode) return Ok();
  return set_assign_mode(enable);
}

Result<std::string> Monitor::show_num_mbm_cntrs(const Node&) {
  std::string out;
  bool sep = false;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    if (sep) out += ';';
    sep = true;
    out += std::to_string(d.id) + "=" +
           std::to_string(m_.info.res(hw::ResourceId::L3).mon.cntr_assign.num_cntrs);
  }
  return out + "\n";
}

Result<std::string> Monitor::show_available_mbm_cntrs(const Node&) {
  if (!set_.mbm_event_mode) return fail(EINVAL, kNotEnabled);
  std::string out;
  bool sep = false;
  for (const hw::MonDomain& d : m_.info.res(hw::ResourceId::L3).mon.mon_domains) {
    if (sep) out += ';';
    sep = true;
    out += std::to_string(d.id) + "=" + std::to_string(free_cntrs(d.id));
  }
  return out + "\n";
}

Result<std::string> Monitor::show_mbm_assign_on_mkdir(const Node&) {
  if (!set_.mbm_event_mode) return fail(EINVAL, kNotEnabled);
  return u(set_.assign_on_mkdir ? 1 : 0);
}

Result<void> Monitor::write_mbm_assign_on_mkdir(Node&, std::string_view data, const Caller&) {
  bool value = false;
  (void)kstr::kstrtobool(kstr::c_string(data), value);  // checked before the lock
  if (!set_.mbm_event_mode) return fail(EINVAL, kNotEnabled);
  set_.assign_on_mkdir = value;
  return Ok();
}

Result<std::string> Monitor::show_event_filter(const Node& n) {
  if (!set_.mbm_event_mode) return fail(EINVAL, kNotEnabled);
  uint32_t cfg = n.event == EventId::MBM_TOTAL ? set_.event_filter_total : set_.event_filter_local;
  std::string out;
  for (unsigned b = 0; b < 7; ++b) {
    if (((cfg >> b) & 1U) == 0) continue;
    if (!out.empty()) out += ',';
    out += kTransactions[b];
  }
  return out + "\n";
}

Result<void> Monitor::write_event_filter(Node& n, std::string_view data, const Caller&) {
  if (!set_.mbm_event_mode) return fail(EINVAL, kNotEnabled);
  // A chmod'ed file of counters that cannot be configured (event_filter_write
  // in fs/resctrl/monitor.c refuses them the same way).
  if (!m_.info.res(hw::ResourceId::L3).mon.cntr_assign.configurable) return Error::make(EINVAL);
  std::optional<std::string_view> rest = kstr_cut(data);
  uint32_t cfg = 0;
  while (rest && !rest->empty()) {
    std::string_view tok = kstr::strim(kstr::strsep(rest, ","));
    bool found = false;
    for (unsigned b = 0; b < 7; ++b) {
      if (tok == kTransactions[b]) {
        cfg |= 1U << b;
        found = true;
      }
    }
    if (!found) return fail(EINVAL, "Invalid memory transaction type " + std::string(tok) + "\n");
  }
  uint32_t& cur = n.event == EventId::MBM_TOTAL ? set_.event_filter_total : set_.event_filter_local;
  if (cur == cfg) return Ok();
  cur = cfg;
  // Reprogram every assigned counter of this event.
  for (auto& [dom, owners] : cntr_owner_) {
    for (size_t id = 0; id < owners.size(); ++id) {
      if (!owners[id] || owners[id]->second != n.event) continue;
      (void)m_.arch->config_cntr(hw::ResourceId::L3, dom, static_cast<unsigned>(id),
                                 owners[id]->first->closid, owners[id]->first->rmid, n.event, cfg,
                                 true);
    }
  }
  return Ok();
}

// The rows of info/L3_MON and its event_configs/<event>.
FileRows mon_info_file_rows() {
  static const FileRow kRows[] = {
      {.name = "num_rmids",
       .mode = 0444,
       .flags = kInfo | kMon,
       .show = show_fn<&Monitor::show_num_rmids>},
      {.name = "mon_features",
       .mode = 0444,
       .flags = kInfo | kMon,
       .show = show_fn<&Monitor::show_mon_features>},
      {.name = "max_threshold_occupancy",
       .mode = 0644,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_max_threshold_occupancy>,
       .write = write_fn<&Monitor::write_max_threshold_occupancy>},
      {.name = "mbm_assign_mode",
       .mode = 0644,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_mbm_assign_mode>,
       .write = write_fn<&Monitor::write_mbm_assign_mode>,
       .refuse_unlocked = refuse_no_newline},
      {.name = "mbm_total_bytes_config",
       .mode = 0644,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_mbm_total_config>,
       .write = write_fn<&Monitor::write_mbm_total_config>,
       .cond = cond_fn<&Monitor::cond_bmec_total>},
      {.name = "mbm_local_bytes_config",
       .mode = 0644,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_mbm_local_config>,
       .write = write_fn<&Monitor::write_mbm_local_config>,
       .cond = cond_fn<&Monitor::cond_bmec_local>},
      {.name = "num_mbm_cntrs",
       .mode = 0444,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_num_mbm_cntrs>,
       .cond = cond_fn<&Monitor::cond_abmc>},
      {.name = "available_mbm_cntrs",
       .mode = 0444,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_available_mbm_cntrs>,
       .cond = cond_fn<&Monitor::cond_abmc>,
       .read_status = true},
      {.name = "mbm_assign_on_mkdir",
       .mode = 0644,
       .flags = kInfoL3Mon,
       .show = show_fn<&Monitor::show_mbm_assign_on_mkdir>,
       .write = write_fn<&Monitor::write_mbm_assign_on_mkdir>,
       .cond = cond_fn<&Monitor::cond_abmc>,
       .read_status = true,
       .refuse_unlocked = refuse_not_bool},
      // info/L3_MON/event_configs/<event>
      {.name = "event_filter",
       .mode = 0444,
       .flags = kAssignConfig,
       .show = show_fn<&Monitor::show_event_filter>,
       .write = write_fn<&Monitor::write_event_filter>,
       .read_status = true,
       .refuse_unlocked = refuse_no_newline},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal

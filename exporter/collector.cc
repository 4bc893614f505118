// Implements Collector (see collector.h): counter folding, the Prometheus
// text exposition and the page's JSON.
#include "exporter/collector.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <set>

#include <nlohmann/json.hpp>

namespace resctrlfs::exporter {

namespace {

constexpr ReadKind kOmitReasons[] = {ReadKind::kUnavailable, ReadKind::kUnassigned,
                                     ReadKind::kError, ReadKind::kReadFailed, ReadKind::kMalformed};

const char* const kModes[] = {"shareable", "exclusive", "pseudo-locksetup", "pseudo-locked"};

// Appends `s` with invalid UTF-8 sequences replaced by U+FFFD.
void append_utf8(std::string& out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF.
      uint32_t cp = c & (0x7F >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      ok = !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
           !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
}

std::string fmt_u(uint64_t v) {
  char b[24];
  auto [p, ec] = std::to_chars(b, b + sizeof b, v);
  return std::string(b, p);
}

std::string fmt_d(double v) {
  char b[64];
  auto [p, ec] = std::to_chars(b, b + sizeof b, v);
  return std::string(b, p);
}

// One metric family: HELP, TYPE, then its samples, kept together as the
// text format requires.
struct Family {
  std::string name, help, type;
  std::string samples;
  void add(const std::string& labels, const std::string& value) {
    samples.append(name);
    if (!labels.empty()) samples.append("{").append(labels).append("}");
    samples.append(" ").append(value).append("\n");
  }
};

class Labels {
 public:
  Labels& add(const char* k, std::string_view v) {
    if (!s_.empty()) s_.push_back(',');
    s_.append(k).append("=\"").append(escape_label_value(v)).append("\"");
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

struct Families {
  std::vector<Family> list;
  Family& get(const std::string& name, const char* type, const std::string& help) {
    for (Family& f : list) {
      if (f.name == name) return f;
    }
    list.push_back({name, help, type, {}});
    return list.back();
  }
  std::string render() const {
    std::string out;
    for (const Family& f : list) {
      out.append("# HELP ").append(f.name).append(" ");
      for (char c : f.help) {
        if (c == '\\') {
          out.append("\\\\");
        } else if (c == '\n') {
          out.append("\\n");
        } else {
          out.push_back(c);
        }
      }
      out.append("\n# TYPE ").append(f.name).append(" ").append(f.type).append("\n");
      out.append(f.samples);
    }
    return out;
  }
};

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '_';
  }
  return s;
}

std::string domain_id_label(unsigned id) { return fmt_u(id); }

bool has_rmid(const Group& g) {
  return !(g.ctrl() && (g.mode == "pseudo-locked" || g.mode == "pseudo-locksetup"));
}

}  // namespace

bool cumulative_event(const std::string& event) { return event != "llc_occupancy"; }

std::string escape_label_value(std::string_view v) {
  std::string valid;
  append_utf8(valid, v);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '"') {
      out.append("\\\"");
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string group_label(const std::string& name) { return name.empty() ? "/" : name; }

std::string metric_name_for(const std::string& resource, const std::string& event) {
  if (event == "llc_occupancy") return "node_resctrl_llc_occupancy_bytes";
  if (event == "mbm_total_bytes" || event == "mbm_local_bytes") {
    return "node_resctrl_mbm_bytes_total";
  }
  const std::string base = "node_resctrl_" + lower(resource) + "_" + lower(event);
  if (event == "core_energy") return base + "_joules_total";
  if (event == "activity") return base + "_farads_total";
  return base + "_total";
}

void Collector::fold(Snapshot& s) {
  ++gen_;
  std::string key;
  for (Group& g : s.groups) {
    for (MonRead& r : g.mon) {
      if (r.kind != ReadKind::kValue || !cumulative_event(r.event)) continue;
      key.assign(g.name).push_back('\0');
      key.append(g.mon_group).push_back('\0');
      key.append(r.domain).push_back('\0');
      key.append(r.event);
      auto [it, fresh] = running_.try_emplace(key);
      Running& run = it->second;
      if (fresh) {
        run.total_u = r.u;
        run.total_d = r.d;
      } else if (r.is_float) {
        if (r.d >= run.last_d) {
          run.total_d += r.d - run.last_d;
        } else {
          run.total_d += r.d;
          ++resets_;
        }
      } else if (r.u >= run.last_u) {
        run.total_u += r.u - run.last_u;
      } else {
        run.total_u += r.u;
        ++resets_;
      }
      run.last_u = r.u;
      run.last_d = r.d;
      run.gen = gen_;
      r.u = run.total_u;
      r.d = r.is_float ? run.total_d : static_cast<double>(run.total_u);
    }
  }
  // A series that was not read this time (group gone, domain offline, a read
  // that failed) is forgotten only when its group is gone: a failed read
  // keeps the running total for the next successful one.
  std::set<std::pair<std::string, std::string>> live;
  for (const Group& g : s.groups) live.emplace(g.name, g.mon_group);
  for (auto it = running_.begin(); it != running_.end();) {
    const std::string& k = it->first;
    const size_t a = k.find('\0');
    const size_t b = k.find('\0', a + 1);
    if (it->second.gen != gen_ && !live.count({k.substr(0, a), k.substr(a + 1, b - a - 1)})) {
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

Snapshot Collector::collect() {
  const auto t0 = std::chrono::steady_clock::now();
  Snapshot s = reader_.read();
  s.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  if (s.ok) fold(s);
  for (const auto& [k, n] : s.omitted) omitted_total_[k] += n;
  read_errors_total_ += s.read_errors;
  const auto t1 = std::chrono::steady_clock::now();
  last_duration_s_ = std::chrono::duration<double>(t1 - t0).count();
  last_collect_ = t1;
  history_.record(s, s.time_ms);
  return s;
}

std::chrono::steady_clock::duration Collector::since_last_collect() const {
  if (!last_collect_) return std::chrono::steady_clock::duration::max();
  return std::chrono::steady_clock::now() - *last_collect_;
}

GroupSums group_sums(const Group& g) {
  GroupSums out;
  auto add = [](std::optional<double>& sum, double v) { sum = sum.value_or(0) + v; };
  for (const MonRead& r : g.mon) {
    if (r.kind != ReadKind::kValue || r.domain.rfind("mon_L3_", 0) != 0) continue;
    if (r.event == "llc_occupancy") add(out.occupancy_bytes, r.d);
    if (r.event == "mbm_total_bytes") add(out.mbm_total_bytes, r.d);
    if (r.event == "mbm_local_bytes") add(out.mbm_local_bytes, r.d);
  }
  return out;
}

std::string bandwidth_unit(const CtrlInfo& c, bool mba_mbps) {
  if (mba_mbps && c.schema == "MB") return "MBps";
  if (!c.thread_throttle_mode && c.delay_linear == 0u && c.min_bandwidth == 0u) return "1/8 GB/s";
  return "percent";
}

std::string Collector::metrics() {
  Snapshot s = collect();
  return render_metrics(s, omitted_total_, resets_, last_duration_s_, read_errors_total_);
}

std::string Collector::api_state() { return render_api_state(collect()); }

std::string render_metrics(const Snapshot& s, const std::map<ReadKind, uint64_t>& omitted_total,
                           uint64_t resets, double duration_s, uint64_t read_errors) {
  Families fam;
  fam.get("node_resctrl_up", "gauge", "1 when the resctrl tree could be read, else 0.")
      .add("", s.ok ? "1" : "0");
  fam.get("node_resctrl_scrape_duration_seconds", "gauge",
          "Time spent reading the resctrl tree for this scrape.")
      .add("", fmt_d(duration_s));
  Family& omitted = fam.get("node_resctrl_samples_omitted_total", "counter",
                            "mon_data reads left out of the exposition since the exporter "
                            "started, by reason (the file said Unavailable, Unassigned or Error, "
                            "the read failed, or the text was not a number).");
  for (ReadKind k : kOmitReasons) {
    auto it = omitted_total.find(k);
    omitted.add(Labels().add("reason", omit_reason(k)).str(),
                fmt_u(it == omitted_total.end() ? 0 : it->second));
  }
  fam.get("node_resctrl_mon_data_resets_total", "counter",
          "Reads of a cumulative mon_data counter that were smaller than the previous read; "
          "each was added whole to the exported running total.")
      .add("", fmt_u(resets));
  fam.get("node_resctrl_read_errors_total", "counter",
          "Files and directories of the tree that could not be read (open, read or listing "
          "failed) since the exporter started; each is logged with its errno, rate-limited.")
      .add("", fmt_u(read_errors));
  if (!s.ok) return fam.render();

  // Info: control resources.
  uint64_t min_closids = UINT64_MAX;
  bool io_alloc_on = false;
  for (const CtrlInfo& c : s.ctrl) {
    Labels schema;
    schema.add("schema", c.schema);
    if (c.num_closids) {
      fam.get("node_resctrl_closids", "gauge", "CLOSIDs this schema offers (info/*/num_closids).")
          .add(schema.str(), fmt_u(*c.num_closids));
      min_closids = std::min(min_closids, *c.num_closids);
    }
    if (c.cbm_mask) {
      fam.get("node_resctrl_cache_ways", "gauge",
              "Ways of the cache (bits of info/*/cbm_mask), per schema.")
          .add(schema.str(), fmt_u(static_cast<uint64_t>(std::popcount(*c.cbm_mask))));
    }
    if (c.shareable_bits) {
      fam.get("node_resctrl_cache_shareable_ways", "gauge",
              "Ways other agents of the hardware may use (bits of info/*/shareable_bits).")
          .add(schema.str(), fmt_u(static_cast<uint64_t>(std::popcount(*c.shareable_bits))));
    }
    if (!c.io_alloc.empty() && c.io_alloc != "not supported") {
      io_alloc_on = io_alloc_on || c.io_alloc == "enabled";
      fam.get("node_resctrl_io_alloc_enabled", "gauge",
              "1 when I/O allocation (info/*/io_alloc) is enabled on the schema.")
          .add(schema.str(), c.io_alloc == "enabled" ? "1" : "0");
    }
    for (const auto& [id, usage] : c.bit_usage) {
      static const std::pair<char, const char*> kUsage[] = {
          {'0', "unused"},    {'H', "hardware"},  {'X', "hardware_shareable"},
          {'S', "shareable"}, {'E', "exclusive"}, {'P', "pseudo_locked"}};
      for (const auto& [ch, name] : kUsage) {
        const auto n = static_cast<uint64_t>(std::count(usage.begin(), usage.end(), ch));
        fam.get("node_resctrl_bit_usage_ways", "gauge",
                "Ways of a cache domain by use, from info/*/bit_usage.")
            .add(Labels()
                     .add("schema", c.schema)
                     .add("domain", domain_id_label(id))
                     .add("usage", name)
                     .str(),
                 fmt_u(n));
      }
    }
  }

  // Info: groups, CLOSIDs and RMIDs in use.
  uint64_t ctrl_groups = 0, mon_groups = 0, with_rmid = 0;
  for (const Group& g : s.groups) {
    (g.ctrl() ? ctrl_groups : mon_groups)++;
    if (has_rmid(g)) ++with_rmid;
  }
  Family& groups = fam.get("node_resctrl_groups", "gauge",
                           "Resource groups, the default group included, by type.");
  groups.add(Labels().add("type", "ctrl_mon").str(), fmt_u(ctrl_groups));
  groups.add(Labels().add("type", "mon").str(), fmt_u(mon_groups));
  if (min_closids != UINT64_MAX) {
    // Every CTRL_MON group holds a CLOSID, a pseudo-locked one too; io_alloc
    // reserves the highest.
    const uint64_t used = ctrl_groups + (io_alloc_on ? 1 : 0);
    fam.get("node_resctrl_closids_in_use", "gauge",
            "CLOSIDs held by CTRL_MON groups (and io_alloc when enabled).")
        .add("", fmt_u(used));
    fam.get("node_resctrl_closids_free", "gauge",
            "CLOSIDs left for new CTRL_MON groups (the smallest num_closids minus those in use).")
        .add("", fmt_u(min_closids > used ? min_closids - used : 0));
  }
  for (const MonInfo& m : s.mon) {
    Labels res;
    res.add("resource", m.resource);
    if (m.num_rmids) {
      fam.get("node_resctrl_rmids", "gauge", "RMIDs of a monitoring resource (num_rmids).")
          .add(res.str(), fmt_u(*m.num_rmids));
      fam.get("node_resctrl_rmids_in_use", "gauge",
              "RMIDs held by groups (RMIDs in limbo after rmdir are not visible and not counted).")
          .add(res.str(), fmt_u(with_rmid));
      fam.get("node_resctrl_rmids_free", "gauge",
              "num_rmids minus the RMIDs held by groups (limbo RMIDs count as free).")
          .add(res.str(), fmt_u(*m.num_rmids > with_rmid ? *m.num_rmids - with_rmid : 0));
    }
    if (!m.mbm_assign_mode.empty()) {
      fam.get("node_resctrl_mbm_assign_mode", "gauge",
              "The MBM counter assignment mode in force (info/*_MON/mbm_assign_mode).")
          .add(Labels().add("resource", m.resource).add("mode", m.mbm_assign_mode).str(), "1");
    }
    for (const auto& [id, n] : m.num_mbm_cntrs) {
      fam.get("node_resctrl_mbm_counters", "gauge",
              "Assignable MBM counters per monitoring domain (num_mbm_cntrs).")
          .add(Labels().add("resource", m.resource).add("domain", domain_id_label(id)).str(),
               fmt_u(n));
    }
    for (const auto& [id, n] : m.available_mbm_cntrs) {
      fam.get("node_resctrl_mbm_counters_available", "gauge",
              "Unassigned MBM counters per monitoring domain (available_mbm_cntrs).")
          .add(Labels().add("resource", m.resource).add("domain", domain_id_label(id)).str(),
               fmt_u(n));
    }
  }

  // Per-group controls.
  std::map<std::string, bool> cache_schema;
  for (const CtrlInfo& c : s.ctrl) cache_schema[c.schema] = c.cache();
  for (const Group& g : s.groups) {
    if (!g.ctrl()) continue;
    const std::string gl = group_label(g.name);
    if (!g.mode.empty()) {
      Family& f = fam.get("node_resctrl_group_mode", "gauge",
                          "The mode of a CTRL_MON group: 1 for the mode it is in.");
      for (const char* m : kModes) {
        f.add(Labels().add("group", gl).add("mode", m).str(), g.mode == m ? "1" : "0");
      }
    }
    for (const SchemaLine& l : g.schemata) {
      auto it = cache_schema.find(l.name);
      // A pseudo-locked group's line names the resource (L3), not a schema.
      const bool cache = it != cache_schema.end()
                             ? it->second
                             : l.name.rfind("L2", 0) == 0 || l.name.rfind("L3", 0) == 0;
      for (const auto& [id, val] : l.domains) {
        Labels lab;
        lab.add("group", gl).add("schema", l.name).add("domain", domain_id_label(id));
        uint64_t v = 0;
        if (cache) {
          if (!parse_hex(val, v)) continue;
          fam.get("node_resctrl_group_cache_ways", "gauge",
                  "Ways of the cache a group may fill: set bits of its schemata mask.")
              .add(lab.str(), fmt_u(static_cast<uint64_t>(std::popcount(v))));
          fam.get("node_resctrl_group_cache_mask", "gauge",
                  "A group's schemata cache mask (capacity bitmask) as a number.")
              .add(lab.str(), fmt_u(v));
        } else {
          if (!parse_dec(val, v)) continue;
          fam.get("node_resctrl_group_bandwidth", "gauge",
                  "A group's MB/SMBA schemata value: percent (Intel MBA), MBps (mba_MBps mount) "
                  "or AMD bandwidth units.")
              .add(lab.str(), fmt_u(v));
        }
      }
    }
  }

  // Monitoring.
  for (const Group& g : s.groups) {
    const std::string gl = group_label(g.name);
    for (const MonRead& r : g.mon) {
      if (r.kind != ReadKind::kValue) continue;
      Labels lab;
      lab.add("group", gl).add("mon_group", g.mon_group).add("domain", r.domain);
      const std::string name = metric_name_for(r.resource, r.event);
      const std::string value = r.is_float ? fmt_d(r.d) : fmt_u(r.u);
      if (r.event == "llc_occupancy") {
        fam.get(name, "gauge",
                "Last-level cache occupancy in bytes (mon_data llc_occupancy). A CTRL_MON "
                "group's series (mon_group=\"\") includes its MON groups.")
            .add(lab.str(), value);
      } else if (r.event == "mbm_total_bytes" || r.event == "mbm_local_bytes") {
        lab.add("scope", r.event == "mbm_total_bytes" ? "total" : "local");
        fam.get(name, "counter",
                "Memory bandwidth in bytes (mon_data mbm_total_bytes, mbm_local_bytes), a "
                "running total that never decreases. A CTRL_MON group's series includes its "
                "MON groups.")
            .add(lab.str(), value);
      } else {
        fam.get(name, "counter",
                "Telemetry event " + r.event + " of " + r.resource +
                    " (mon_data), a running total that never decreases.")
            .add(lab.str(), value);
      }
    }
  }
  return fam.render();
}

std::string render_api_state(const Snapshot& s) {
  using nlohmann::json;
  json j;
  j["ok"] = s.ok;
  j["error"] = s.error;
  j["time_ms"] = s.time_ms != 0 ? s.time_ms
                                : std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
  json caches = json::array(), bw = json::array();
  for (const CtrlInfo& c : s.ctrl) {
    if (c.cache()) {
      json d = json::array();
      for (const auto& [id, usage] : c.bit_usage) d.push_back({{"id", id}, {"bit_usage", usage}});
      caches.push_back({{"schema", c.schema},
                        {"cbm_len", std::bit_width(*c.cbm_mask)},
                        {"shareable_bits", c.shareable_bits.value_or(0)},
                        {"io_alloc", c.io_alloc},
                        {"num_closids", c.num_closids.value_or(0)},
                        {"domains", d}});
    } else {
      bw.push_back({{"schema", c.schema},
                    {"min_bandwidth", c.min_bandwidth.value_or(0)},
                    {"bandwidth_gran", c.bandwidth_gran.value_or(0)},
                    {"unit", bandwidth_unit(c, s.mba_mbps)}});
    }
  }
  j["caches"] = caches;
  j["bandwidth"] = bw;
  json groups = json::array();
  std::map<std::string, size_t> mon_count;
  for (const Group& g : s.groups) {
    if (!g.ctrl()) ++mon_count[g.name];
  }
  for (const Group& g : s.groups) {
    if (!g.ctrl()) continue;
    json sch = json::object();
    for (const SchemaLine& l : g.schemata) {
      json d = json::object();
      for (const auto& [id, v] : l.domains) d[std::to_string(id)] = v;
      sch[l.name] = l.uninitialized ? json("uninitialized") : d;
    }
    json mon = json::array();
    for (const MonRead& r : g.mon) {
      if (r.kind != ReadKind::kValue) {
        mon.push_back({{"domain", r.domain}, {"event", r.event}, {"omitted", omit_reason(r.kind)}});
      } else {
        mon.push_back({{"domain", r.domain}, {"event", r.event}, {"value", r.d}});
      }
    }
    json o = {{"name", g.name},  {"label", group_label(g.name)},    {"mode", g.mode},
              {"schemata", sch}, {"mon_groups", mon_count[g.name]}, {"mon", mon}};
    const GroupSums sums = group_sums(g);
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    o["occupancy_bytes"] = opt(sums.occupancy_bytes);
    o["mbm_total_bytes"] = opt(sums.mbm_total_bytes);
    o["mbm_local_bytes"] = opt(sums.mbm_local_bytes);
    groups.push_back(std::move(o));
  }
  j["groups"] = groups;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace resctrlfs::exporter

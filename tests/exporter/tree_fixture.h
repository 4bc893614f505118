// A resctrl-shaped tree in a temporary directory for the exporter's unit
// tests, and a checker of the Prometheus text format.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace resctrlfs::exporter::testing {

class TempTree {
 public:
  TempTree() {
    char tmpl[] = "/tmp/exporter-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    root_ = d;
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }
  // Writes `content` to `rel`, making the directories on the way.
  void write(const std::string& rel, const std::string& content) {
    std::filesystem::path p = std::filesystem::path(root_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }
  void mkdir(const std::string& rel) {
    std::filesystem::create_directories(std::filesystem::path(root_) / rel);
  }
  void remove(const std::string& rel) {
    std::filesystem::remove_all(std::filesystem::path(root_) / rel);
  }

  // A two-socket Intel tree as the kernel shows it: L3 (11 ways) and MB,
  // L3 monitoring with three events, the default group and `groups`.
  void intel_2s(const std::vector<std::string>& groups = {}) {
    write("info/last_cmd_status", "ok\n");
    write("info/L3/num_closids", "16\n");
    write("info/L3/cbm_mask", "7ff\n");
    write("info/L3/min_cbm_bits", "1\n");
    write("info/L3/shareable_bits", "0\n");
    write("info/L3/bit_usage", "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n");
    write("info/L3/sparse_masks", "0\n");
    write("info/MB/num_closids", "8\n");
    write("info/MB/min_bandwidth", "10\n");
    write("info/MB/bandwidth_gran", "10\n");
    write("info/MB/delay_linear", "1\n");
    write("info/MB/thread_throttle_mode", "max\n");
    write("info/L3_MON/num_rmids", "224\n");
    write("info/L3_MON/mon_features", "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
    write("info/L3_MON/max_threshold_occupancy", "65536\n");
    write("info/L3_MON/mbm_assign_mode", "[default]\n");
    group("", "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
    mkdir("mon_groups");
    for (const std::string& g : groups) group(g, "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  }
  // A CTRL_MON group (or the default group, "") with mon_data for domains 0 and 1.
  void group(const std::string& name, const std::string& schemata,
             const std::string& mode = "shareable") {
    const std::string p = name.empty() ? "" : name + "/";
    write(p + "schemata", schemata);
    write(p + "mode", mode + "\n");
    write(p + "tasks", "");
    write(p + "cpus", "0\n");
    mkdir(p + "mon_groups");
    mon(p, 0);
    mon(p, 1);
  }
  void mon(const std::string& prefix, unsigned dom, uint64_t occ = 0, uint64_t total = 0,
           uint64_t local = 0) {
    const std::string d = prefix + "mon_data/mon_L3_0" + std::to_string(dom) + "/";
    write(d + "llc_occupancy", std::to_string(occ) + "\n");
    write(d + "mbm_total_bytes", std::to_string(total) + "\n");
    write(d + "mbm_local_bytes", std::to_string(local) + "\n");
  }

 private:
  std::string root_;
};

// One sample of an exposition: name, labels, value text.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// Parses the text format strictly as Prometheus 0.0.4 describes it and
// checks its rules: every sample belongs to the family of the last TYPE line
// (families are contiguous and declared once), HELP precedes TYPE, label
// values are well-escaped, no series appears twice, values are numbers.
// Returns the samples; a violation fails the test with the offending line.
inline std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> out;
  std::set<std::string> families, series;
  std::string family, help_for;
  std::istringstream in(text);
  std::string line;
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  while (std::getline(in, line)) {
    INFO("line: " << line);
    REQUIRE(!line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      help_for = line.substr(7, line.find(' ', 7) - 7);
      REQUIRE(families.count(help_for) == 0);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      REQUIRE(name == help_for);
      REQUIRE((type == "gauge" || type == "counter"));
      if (type == "counter") REQUIRE(name.size() > 6);
      if (type == "counter") REQUIRE(name.substr(name.size() - 6) == "_total");
      REQUIRE(families.insert(name).second);
      family = name;
      continue;
    }
    REQUIRE(line[0] != '#');
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    REQUIRE(s.name == family);
    for (char c : s.name) REQUIRE((std::isalnum(static_cast<unsigned char>(c)) || c == '_'));
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        size_t eq = line.find('=', i);
        REQUIRE(eq != std::string::npos);
        std::string key = line.substr(i, eq - i);
        REQUIRE(line[eq + 1] == '"');
        std::string val;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            REQUIRE(j < line.size());
            REQUIRE((line[j] == '\\' || line[j] == '"' || line[j] == 'n'));
            val.push_back(line[j] == 'n' ? '\n' : line[j]);
          } else {
            val.push_back(line[j]);
          }
        }
        REQUIRE(j < line.size());
        REQUIRE(s.labels.emplace(key, val).second);
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    REQUIRE(line[i] == ' ');
    s.value = line.substr(i + 1);
    char* end = nullptr;
    std::strtod(s.value.c_str(), &end);
    REQUIRE(end != s.value.c_str());
    REQUIRE(*end == 0);
    std::string key = s.name;
    for (auto& [k, v] : s.labels) key += "|" + k + "=" + v;
    REQUIRE(series.insert(key).second);
    out.push_back(std::move(s));
  }
  return out;
}

// The samples of `name` whose labels include `match`.
inline std::vector<Sample> find(const std::vector<Sample>& all, const std::string& name,
                                const std::map<std::string, std::string>& match = {}) {
  std::vector<Sample> out;
  for (const Sample& s : all) {
    if (s.name != name) continue;
    bool ok = true;
    for (auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (ok) out.push_back(s);
  }
  return out;
}

inline std::string value_of(const std::vector<Sample>& all, const std::string& name,
                            const std::map<std::string, std::string>& match = {}) {
  auto v = find(all, name, match);
  INFO(name);
  REQUIRE(v.size() == 1);
  return v[0].value;
}

}  // namespace resctrlfs::exporter::testing

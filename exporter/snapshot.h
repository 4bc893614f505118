// Defines what resctrlfs-exporter reads from a resctrl tree in one pass (a
// Snapshot): control info per schema, monitoring info per resource, and per
// group its mode, schemata and monitoring reads. Plain data; the reader is
// exporter/tree.h, the renderers exposition.h and api.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace resctrlfs::exporter {

// What one mon_data event file said. Only kValue carries a number; the
// others are the kernel's three words, a failed read (the domain went away,
// the group was removed) or text that is none of these.
enum class ReadKind { kValue, kUnavailable, kUnassigned, kError, kReadFailed, kMalformed };

// The omission reasons, as the label of node_resctrl_samples_omitted_total.
const char* omit_reason(ReadKind k);

struct MonRead {
  std::string domain;    // directory name: mon_L3_00, mon_sub_L3_01, mon_PERF_PKG_00
  std::string resource;  // L3, PERF_PKG (from the directory name)
  std::string event;     // file name: llc_occupancy, mbm_total_bytes, core_energy, ...
  ReadKind kind = ReadKind::kReadFailed;
  bool is_float = false;  // telemetry events printed as <int>.<frac>
  uint64_t u = 0;         // the value when !is_float
  double d = 0;           // the value (also set for integers)
};

// One line of a group's schemata.
struct SchemaLine {
  std::string name;                                       // L3, L3CODE, L3DATA, L2, MB, SMBA
  bool uninitialized = false;                             // pseudo-locksetup: "L3:uninitialized"
  std::vector<std::pair<unsigned, std::string>> domains;  // id -> value text
};

struct Group {
  std::string name;       // CTRL_MON group; "" for the default group
  std::string mon_group;  // MON group under mon_groups/; "" for the CTRL_MON group itself
  std::string mode;       // CTRL_MON only: shareable, exclusive, pseudo-locksetup, pseudo-locked
  std::vector<SchemaLine> schemata;
  std::vector<MonRead> mon;
  bool ctrl() const { return mon_group.empty(); }
};

// info/<schema>/ of a control resource.
struct CtrlInfo {
  std::string schema;
  std::optional<uint64_t> num_closids, cbm_mask, min_cbm_bits, shareable_bits;
  std::optional<uint64_t> min_bandwidth, bandwidth_gran;
  bool cache() const { return cbm_mask.has_value(); }
  // Cache schemas: bit_usage per domain (most significant way first).
  std::vector<std::pair<unsigned, std::string>> bit_usage;
  std::string io_alloc;  // "enabled", "disabled", "not supported", "" when absent
  // Bandwidth schemas: info/<schema>/delay_linear, and whether
  // thread_throttle_mode is there (the kernel makes it for Intel's MBA only).
  std::optional<uint64_t> delay_linear;
  bool thread_throttle_mode = false;
};

// info/<RES>_MON/.
struct MonInfo {
  std::string resource;  // L3, PERF_PKG
  std::optional<uint64_t> num_rmids;
  std::vector<std::string> features;
  std::string mbm_assign_mode;  // the bracketed one; "" when the file is absent
  std::vector<std::pair<unsigned, uint64_t>> num_mbm_cntrs, available_mbm_cntrs;
};

struct Snapshot {
  bool ok = false;
  std::string error;  // why the tree could not be read at all
  std::vector<CtrlInfo> ctrl;
  std::vector<MonInfo> mon;
  std::vector<Group>
      groups;  // the default group first, then by name; MON groups after their parent
  // Mounted with mba_MBps: the default group has mba_MBps_event (kernels
  // from 6.14 on, resctrlfs), or the mount's options in /proc/self/mountinfo
  // name it.
  bool mba_mbps = false;
  std::map<ReadKind, uint64_t> omitted;  // this pass's omitted mon_data reads by reason
  uint64_t read_errors = 0;  // files and directories of this pass that could not be read
  int64_t time_ms = 0;       // when it was read (Unix time, ms); 0 when not set
};

}  // namespace resctrlfs::exporter

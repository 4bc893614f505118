// Defines Collector: one scrape of a resctrl tree (TreeReader) turned into
// the Prometheus text exposition (/metrics) or the JSON the page polls
// (/api/state), with the state that must outlive a scrape: running totals of
// the cumulative counters and the omission counts.
//
// Cumulative counters (mbm_*_bytes, telemetry events) are exported as a
// running total kept by the exporter, per series (group, MON group, domain,
// event): the first read is taken as it is, every later read adds its
// increase over the previous read, and a read smaller than the previous one
// (the counter started again: a domain that went offline and came back, a
// hardware wrap that the reader of the hardware counter did not fold) adds
// the new read whole, which is what Prometheus's rate() assumes after a
// reset. So the exported counter equals the file until the file goes
// backwards, and never decreases while the exporter runs; a series whose
// file disappears (group removed) is forgotten, and a group made again under
// the same name starts from its file's value.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "exporter/history.h"
#include "exporter/snapshot.h"
#include "exporter/tree.h"

namespace resctrlfs::exporter {

class Collector {
 public:
  explicit Collector(TreeReader& reader) : reader_(reader) {}

  // Reads the tree and folds the counters; the snapshot's cumulative reads
  // then hold the running totals.
  Snapshot collect();

  // collect() rendered in the Prometheus text format (version 0.0.4).
  std::string metrics();
  // collect() as the JSON document of /api/state.
  std::string api_state();
  // The samples kept from every collect() (History::json()): /api/history.
  std::string api_history() const { return history_.json(); }
  const History& history() const { return history_; }
  // Time since the last collect(); max() before the first.
  std::chrono::steady_clock::duration since_last_collect() const;

  uint64_t resets() const { return resets_; }
  uint64_t read_errors() const { return read_errors_total_; }

 private:
  struct Running {
    uint64_t last_u = 0, total_u = 0;
    double last_d = 0, total_d = 0;
    uint64_t gen = 0;
  };
  void fold(Snapshot& s);

  TreeReader& reader_;
  std::unordered_map<std::string, Running> running_;
  uint64_t gen_ = 0;
  uint64_t resets_ = 0;
  std::map<ReadKind, uint64_t> omitted_total_;
  uint64_t read_errors_total_ = 0;
  double last_duration_s_ = 0;
  History history_;
  std::optional<std::chrono::steady_clock::time_point> last_collect_;
};

// A CTRL_MON group's sums over the top-level L3 domains (mon_L3_XX is
// already the sum of its SNC nodes, so mon_sub_ directories are left out);
// empty when no such file gave a value.
struct GroupSums {
  std::optional<double> occupancy_bytes, mbm_total_bytes, mbm_local_bytes;
};
GroupSums group_sums(const Group& g);

// What a value of bandwidth schema `c` means: "percent" (Intel's MBA, and
// any resource that does not say otherwise), "MBps" (MB under the mba_MBps
// mount option) or "1/8 GB/s" (AMD: no thread_throttle_mode, non-linear
// delay, min_bandwidth 0; the kernel's documentation: "multiples of one
// eighth GB/s").
std::string bandwidth_unit(const CtrlInfo& c, bool mba_mbps);

// True for events whose file is a cumulative count (everything but
// llc_occupancy).
bool cumulative_event(const std::string& event);

// Renders a snapshot; `omitted_total` and `resets` are the lifetime counts,
// `duration_s` the scrape's reading time, `read_errors` the lifetime count
// of files and directories that could not be read. Exposed for the unit
// tests.
std::string render_metrics(const Snapshot& s, const std::map<ReadKind, uint64_t>& omitted_total,
                           uint64_t resets, double duration_s, uint64_t read_errors = 0);
std::string render_api_state(const Snapshot& s);

// Text-format helpers (exposed for the unit tests).
std::string escape_label_value(std::string_view v);  // also makes it valid UTF-8
std::string group_label(const std::string& name);    // "/" for the default group
std::string metric_name_for(const std::string& resource, const std::string& event);

}  // namespace resctrlfs::exporter

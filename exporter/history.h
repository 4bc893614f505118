// Defines History, the per-group monitoring samples of the last minutes that
// the page draws on load (/api/history) so that its plots start with what
// the exporter has seen instead of empty, and Sampler, which reads the tree
// every kSamplePeriod on the exporter's event loop so that there is a
// history when no page is open and no scraper calls. Every read of the tree
// (a scrape, a page's poll, the sampler's) adds a sample.
//
// The sampler's period is 5 s, not the page's 1 s: it costs a fifth of a
// scrape a second on a large tree, and under the newest kernels every read
// of a group's file resets info/last_cmd_status, which the sampler should
// not do more often than needed. A page open, or Prometheus scraping, gives
// the history their own, denser, reads.
//
// Bounds: samples older than kWindowMs before the newest are dropped, at
// most kMaxSamples are kept, and a read less than kMinGapMs after the last
// kept sample is not kept (a page and a scraper reading at once do not
// double it). Each sample holds, per CTRL_MON group, the same sums as
// /api/state (occupancy and the running MBM totals over the L3 domains).
// A wall clock that goes backwards empties the history.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "exporter/snapshot.h"

namespace resctrlfs::exporter {

class Collector;

class History {
 public:
  static constexpr int64_t kWindowMs = 300'000;
  static constexpr size_t kMaxSamples = 400;
  static constexpr int64_t kMinGapMs = 900;
  static constexpr std::chrono::seconds kSamplePeriod{5};

  struct GroupSample {
    std::string label;
    std::optional<double> occupancy_bytes, mbm_total_bytes, mbm_local_bytes;
  };
  struct Sample {
    int64_t time_ms = 0;
    std::vector<GroupSample> groups;
  };

  // Keeps the CTRL_MON groups' sums of a snapshot that was read (ok) at
  // `time_ms` (Unix time in milliseconds), within the bounds above.
  void record(const Snapshot& s, int64_t time_ms);
  // {"window_ms": ..., "samples": [{"time_ms": ..., "groups": [{"label": ...,
  // "occupancy_bytes": ..., "mbm_total_bytes": ..., "mbm_local_bytes": ...}]}]},
  // oldest first; a sum the tree did not give is null.
  std::string json() const;
  const std::deque<Sample>& samples() const { return samples_; }

 private:
  std::deque<Sample> samples_;
};

// Calls collector.collect() once at start() and then every `period` on `io`
// unless something else (a page, a scrape) read the tree within the period;
// stops with `io`.
class Sampler {
 public:
  Sampler(boost::asio::io_context& io, Collector& collector,
          std::chrono::milliseconds period = History::kSamplePeriod);
  void start();

 private:
  void arm();
  boost::asio::steady_timer timer_;
  Collector& collector_;
  std::chrono::milliseconds period_;
};

}  // namespace resctrlfs::exporter

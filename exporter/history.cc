// Implements History and Sampler (see history.h).
#include "exporter/history.h"

#include <nlohmann/json.hpp>

#include "exporter/collector.h"

namespace resctrlfs::exporter {

void History::record(const Snapshot& s, int64_t time_ms) {
  if (!s.ok) return;
  if (!samples_.empty() && time_ms < samples_.back().time_ms) samples_.clear();
  if (!samples_.empty() && time_ms - samples_.back().time_ms < kMinGapMs) return;
  Sample sample{time_ms, {}};
  for (const Group& g : s.groups) {
    if (!g.ctrl()) continue;
    const GroupSums sums = group_sums(g);
    sample.groups.push_back(
        {group_label(g.name), sums.occupancy_bytes, sums.mbm_total_bytes, sums.mbm_local_bytes});
  }
  samples_.push_back(std::move(sample));
  while (samples_.size() > kMaxSamples || samples_.front().time_ms < time_ms - kWindowMs) {
    samples_.pop_front();
  }
}

std::string History::json() const {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json samples = json::array();
  for (const Sample& s : samples_) {
    json groups = json::array();
    for (const GroupSample& g : s.groups) {
      groups.push_back({{"label", g.label},
                        {"occupancy_bytes", opt(g.occupancy_bytes)},
                        {"mbm_total_bytes", opt(g.mbm_total_bytes)},
                        {"mbm_local_bytes", opt(g.mbm_local_bytes)}});
    }
    samples.push_back({{"time_ms", s.time_ms}, {"groups", std::move(groups)}});
  }
  json j = {{"window_ms", kWindowMs}, {"samples", std::move(samples)}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Sampler::Sampler(boost::asio::io_context& io, Collector& collector,
                 std::chrono::milliseconds period)
    : timer_(io), collector_(collector), period_(period) {}

void Sampler::start() {
  collector_.collect();
  arm();
}

void Sampler::arm() {
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    // A page or a scrape that read the tree within the period took the
    // sample already.
    if (collector_.since_last_collect() >= period_ * 9 / 10) collector_.collect();
    arm();
  });
}

}  // namespace resctrlfs::exporter

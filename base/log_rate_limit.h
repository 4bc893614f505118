// Defines LogRateLimit: at most `burst` log lines per window, the rest
// counted, so that a failure repeated a thousand times (every file of a
// scrape, every accept() of a flood) writes a few lines and a count instead
// of a thousand lines. Not thread-safe: one owner.
#pragma once

#include <chrono>
#include <cstdint>

namespace resctrlfs {

class LogRateLimit {
 public:
  using Clock = std::chrono::steady_clock;

  LogRateLimit(unsigned burst, Clock::duration window) : burst_(burst), window_(window) {}

  // True when a line may be written at `now`; false counts it as suppressed.
  // A window opens at the first line admitted after the previous one ended.
  bool admit(Clock::time_point now = Clock::now()) {
    if (used_ == 0 || now - start_ >= window_) {
      start_ = now;
      used_ = 0;
    }
    if (used_ < burst_) {
      ++used_;
      return true;
    }
    ++suppressed_;
    return false;
  }

  // The lines refused since the last call, for the next line written to say
  // how many were left out.
  uint64_t take_suppressed() {
    const uint64_t n = suppressed_;
    suppressed_ = 0;
    return n;
  }
  uint64_t suppressed() const { return suppressed_; }

 private:
  unsigned burst_;
  Clock::duration window_;
  Clock::time_point start_{};
  unsigned used_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace resctrlfs

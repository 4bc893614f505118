// Defines CounterStore: the counters a reader sees move, kept in a file
// mapping that outlives the daemon, so that a daemon taking the machine
// over after a crash or an upgrade (daemon/takeover.h) continues them
// instead of starting at zero. A SIGKILL leaves no chance to save at death,
// so the state is outside the process all along: the simulated machine
// (SimControl::keep_counter_state) and the Arch's running totals
// (Arch::keep_counter_state) work in a MAP_SHARED mapping of the file.
//
// The file: a header, then the machine's region, then the Arch's, each
// 64-byte aligned. The header names the format (magic, version), the
// platform and the regions' sizes; a takeover uses the file only when all of
// them match what this build computes for this platform, and otherwise
// starts fresh with a reason to log (another platform, another layout from
// another build, a truncated or foreign file). The daemon opens the file
// (in its private state directory) and hands the descriptor here.
//
// hw/ business: daemon/ only opens the file and logs what keep_counters()
// says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "hw/backend.h"

namespace resctrlfs::hw {

class CounterStore {
 public:
  // Maps the regular file open read-write at `fd` (not taken over: the
  // caller closes it) with room for regions of `sizes` bytes, for
  // `platform`. With `take_over` a file whose header matches keeps its
  // contents (carried_over()); any other file, or any file without
  // `take_over`, is made a fresh store of zeros (why_fresh() says why a
  // file could not be used). Errors: the file cannot be sized, allocated
  // (ENOSPC on a full filesystem: nothing is mapped that could fault later)
  // or mapped.
  static Result<std::unique_ptr<CounterStore>> open(int fd, std::string_view platform,
                                                    const std::vector<size_t>& sizes,
                                                    bool take_over);
  ~CounterStore();
  CounterStore(const CounterStore&) = delete;
  CounterStore& operator=(const CounterStore&) = delete;

  std::byte* region(size_t i) const { return base_ + offsets_[i]; }
  bool carried_over() const { return carried_over_; }
  // Why a file was not used (empty: it was, or there was none to use).
  const std::string& why_fresh() const { return why_fresh_; }
  size_t bytes() const { return bytes_; }
  // Marks a fresh store complete, once every region holds its owner's
  // state (keep_counters() does): only then may a successor continue it.
  void mark_complete();

  // The header's layout, for tests that build foreign or damaged files.
  static constexpr size_t kHeaderBytes = 192;
  static constexpr uint32_t kVersion = 2;

 private:
  CounterStore(std::byte* base, size_t bytes, std::vector<size_t> offsets)
      : base_(base), bytes_(bytes), offsets_(std::move(offsets)) {}
  std::byte* base_;
  size_t bytes_;
  std::vector<size_t> offsets_;
  bool carried_over_ = false;
  std::string why_fresh_;
};

// Keeps the counters of `b` (its simulated machine's and its Arch's running
// totals) in the file open at `fd`, continuing those a previous daemon left
// there when `take_over` and the file fits (see CounterStore::open). Call
// before the filesystem mounts; the store must outlive `b`'s Arch and
// machine. Real hardware keeps counting by itself: only the Arch's running
// totals are kept for it.
Result<std::unique_ptr<CounterStore>> keep_counters(Backend& b, int fd, bool take_over);

}  // namespace resctrlfs::hw

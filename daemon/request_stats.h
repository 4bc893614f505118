// Defines RequestStats: how many FUSE requests of each opcode the daemon has
// received, counted from the raw request header before libfuse dispatches
// it, so requests libfuse answers by itself (FLUSH without a handler, INIT,
// INTERRUPT) are counted too. Read through the control socket ("stats") by
// the tests and the benchmark that check the request budget per syscall.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace resctrlfs::daemon {

class RequestStats {
 public:
  // Opcodes up to this value are counted individually; anything else
  // (CUSE, future opcodes) lands in "OTHER".
  static constexpr uint32_t kMaxOpcode = 63;

  void count(uint32_t opcode);
  void reset();
  // Every known opcode name with its count (zeros included), plus "OTHER".
  std::vector<std::pair<std::string, uint64_t>> snapshot() const;
  uint64_t get(std::string_view name) const;

  // The kernel's name of an opcode without the FUSE_ prefix ("LOOKUP"), or
  // nullptr for an unknown opcode.
  static const char* opcode_name(uint32_t opcode);

 private:
  std::array<std::atomic<uint64_t>, kMaxOpcode + 2> counts_{};  // last slot: OTHER
};

}  // namespace resctrlfs::daemon

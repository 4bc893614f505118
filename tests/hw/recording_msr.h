// Defines RecordingMsr: a fake MsrDevice for arch tests. It records every
// access as (cpu, register, value), holds written values, answers QM_CTR
// reads from a script, can fail the n-th write from now, and can play a
// reconnect of the transport (gen).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include "hw/x86/device.h"

namespace resctrlfs::hw::testing {

struct Access {
  char op;  // 'r' or 'w'
  unsigned cpu;
  uint32_t msr;
  uint64_t value;
  bool operator==(const Access&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Access& a) {
  return os << "{" << a.op << " cpu" << a.cpu << " 0x" << std::hex << a.msr << "=0x" << a.value
            << std::dec << "}";
}

inline Access W(unsigned cpu, uint32_t msr, uint64_t v) { return Access{'w', cpu, msr, v}; }
inline Access R(unsigned cpu, uint32_t msr, uint64_t v) { return Access{'r', cpu, msr, v}; }

class RecordingMsr final : public MsrDevice {
 public:
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override {
    uint64_t v = 0;
    if (msr == 0xC8E && !qm_ctr.empty()) {
      v = qm_ctr.front();
      qm_ctr.pop_front();
    } else if (auto it = regs.find({cpu, msr}); it != regs.end()) {
      v = it->second;
    }
    log.push_back(R(cpu, msr, v));
    return v;
  }
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t v) override {
    log.push_back(W(cpu, msr, v));
    if (fail_in && (*fail_in)-- == 0) {
      fail_in.reset();
      return Error::make(EIO, "injected");
    }
    regs[{cpu, msr}] = v;
    return Ok();
  }
  uint64_t reconnects() const override { return gen; }
  std::vector<Access> writes() const {
    std::vector<Access> out;
    for (const auto& a : log)
      if (a.op == 'w') out.push_back(a);
    return out;
  }

  std::map<std::pair<unsigned, uint32_t>, uint64_t> regs;
  std::vector<Access> log;
  std::deque<uint64_t> qm_ctr;
  std::optional<unsigned> fail_in;  // 0: the next write fails
  uint64_t gen = 0;                 // reconnects(): bump to play a broker reconnect
};

}  // namespace resctrlfs::hw::testing

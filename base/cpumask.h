// Defines CpuMask: a fixed-size set of logical CPU numbers (0 .. nr_cpus-1).
//
// Used by hw/ for domain CPU sets and by fs/ for group cpus. Parsing and
// printing in the kernel's bitmap syntaxes lives in base/cpulist.h; this is
// only the container.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace resctrlfs {

class CpuMask {
 public:
  CpuMask() = default;
  explicit CpuMask(unsigned nr_cpus) : nbits_(nr_cpus), words_((nr_cpus + 63) / 64, 0) {}

  unsigned size() const { return nbits_; }
  bool test(unsigned cpu) const {
    return cpu < nbits_ && ((words_[cpu / 64] >> (cpu % 64)) & 1U) != 0;
  }
  void set(unsigned cpu, bool on = true) {
    if (cpu >= nbits_) return;
    if (on) {
      words_[cpu / 64] |= (uint64_t{1} << (cpu % 64));
    } else {
      words_[cpu / 64] &= ~(uint64_t{1} << (cpu % 64));
    }
  }
  void reset(unsigned cpu) { set(cpu, false); }
  void clear() {
    for (auto& w : words_) w = 0;
  }
  bool empty() const {
    for (auto w : words_)
      if (w != 0) return false;
    return true;
  }
  unsigned count() const {
    unsigned n = 0;
    for (auto w : words_) n += static_cast<unsigned>(std::popcount(w));
    return n;
  }
  // Lowest set CPU, or size() when empty.
  unsigned first() const { return next(0); }
  // Lowest set CPU >= from, or size() when none. Scans a word (64 CPUs)
  // per step: a command that looks at one CPU of a 512-CPU machine does
  // not step over the other 511 one by one.
  unsigned next(unsigned from) const { return scan(from, 0); }
  // Lowest CPU >= from that is not set, or size() when none.
  unsigned next_clear(unsigned from) const { return scan(from, ~uint64_t{0}); }
  // The set CPUs in ascending order: O(words + set CPUs), not O(size()).
  std::vector<unsigned> cpus() const {
    std::vector<unsigned> out;
    for (size_t i = 0; i < words_.size(); ++i) {
      for (uint64_t w = words_[i]; w != 0; w &= w - 1)
        out.push_back(static_cast<unsigned>(i * 64 + std::countr_zero(w)));
    }
    return out;
  }

  CpuMask& operator|=(const CpuMask& o) {
    for (size_t i = 0; i < words_.size() && i < o.words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }
  CpuMask& operator&=(const CpuMask& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= (i < o.words_.size() ? o.words_[i] : 0);
    return *this;
  }
  // Removes every CPU of o from this set.
  CpuMask& subtract(const CpuMask& o) {
    for (size_t i = 0; i < words_.size() && i < o.words_.size(); ++i) words_[i] &= ~o.words_[i];
    return *this;
  }
  bool intersects(const CpuMask& o) const {
    for (size_t i = 0; i < words_.size() && i < o.words_.size(); ++i)
      if ((words_[i] & o.words_[i]) != 0) return true;
    return false;
  }
  bool subset_of(const CpuMask& o) const {
    for (size_t i = 0; i < words_.size(); ++i)
      if ((words_[i] & ~(i < o.words_.size() ? o.words_[i] : 0)) != 0) return false;
    return true;
  }
  bool operator==(const CpuMask& o) const = default;

  // 64-bit words, least significant first (for serialisation).
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  // The lowest CPU >= from whose bit differs from `skip`'s (0: the next set
  // CPU, all ones: the next clear one), or size(). Bits at or beyond
  // size() are never set, so only the result needs the bound.
  unsigned scan(unsigned from, uint64_t skip) const {
    if (from >= nbits_) return nbits_;
    size_t i = from / 64;
    uint64_t w = (words_[i] ^ skip) & (~uint64_t{0} << (from % 64));
    while (w == 0) {
      if (++i == words_.size()) return nbits_;
      w = words_[i] ^ skip;
    }
    const unsigned c = static_cast<unsigned>(i * 64 + std::countr_zero(w));
    return c < nbits_ ? c : nbits_;
  }

  unsigned nbits_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace resctrlfs

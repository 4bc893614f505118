// Defines DumpSource: a CpuidSource answering from a CPUID dump file in the
// hw tests' data directory (lines "leaf subleaf eax ebx ecx edx" in hex,
// '#' comments); leaves the file lacks read as zero, every CPU alike. Tests
// may override a leaf with set().
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "hw/x86/device.h"

class DumpSource final : public resctrlfs::hw::CpuidSource {
 public:
  explicit DumpSource(const std::string& name) {
    std::ifstream f(std::string(RESCTRLFS_HW_TEST_DATA) + "/" + name);
    REQUIRE(f.good());
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      uint32_t leaf, sub;
      resctrlfs::hw::CpuidRegs r;
      ss >> std::hex >> leaf >> sub >> r.eax >> r.ebx >> r.ecx >> r.edx;
      REQUIRE(!ss.fail());
      leaves_[{leaf, sub}] = r;
    }
    REQUIRE(!leaves_.empty());
  }
  resctrlfs::hw::CpuidRegs cpuid(unsigned, uint32_t leaf, uint32_t sub) const override {
    auto it = leaves_.find({leaf, sub});
    return it == leaves_.end() ? resctrlfs::hw::CpuidRegs{} : it->second;
  }
  void set(uint32_t leaf, uint32_t sub, resctrlfs::hw::CpuidRegs r) { leaves_[{leaf, sub}] = r; }

 private:
  std::map<std::pair<uint32_t, uint32_t>, resctrlfs::hw::CpuidRegs> leaves_;
};

// Defines the hardware seams of the MPAM code: MscBus (the memory-mapped
// register pages of the machine's MPAM memory-system components, with the
// firmware's description of where each one sits) and MpamTagging (the
// PARTID and PMG the CPUs' MPAM system registers give what runs on them).
// The MPAM Arch (hw/mpam/arch_mpam.h) programs through these only, so the
// same code would drive a real machine's MSCs; the simulator
// (hw/mpam/machine.h) implements both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/result.h"

namespace resctrlfs::hw::mpam {

// Where an MSC sits, as the firmware's MPAM table and cache topology (ACPI
// MPAM + PPTT) describe it: in front of a cache (its level and cache id) or
// of memory (its NUMA node). `cpus` are the CPUs whose traffic it sees.
enum class MscLocus : uint8_t { CACHE, MEMORY };
struct MscInfo {
  MscLocus locus = MscLocus::CACHE;
  unsigned level = 0;  // cache level (2, 3); 0 for memory
  int id = 0;          // cache id, or NUMA node for memory
  std::vector<unsigned> cpus;
  uint64_t base = 0;  // physical address of its register page
};

// The CPUs and caches as the firmware's cache topology (PPTT) and Linux's
// cacheinfo give them: what the driver learns besides the MSCs' registers.
struct CpuPlace {
  int package = 0;
  int core = 0;  // physical core id (no SMT on these parts)
  int l2 = -1;   // L2 cache id, -1: none
  int l3 = -1;   // L3 cache id, -1: none
  int node = 0;  // NUMA node
};
struct CpuTopology {
  std::vector<CpuPlace> cpus;  // index = CPU number
  uint64_t l2_size_bytes = 0;
  uint64_t l3_size_bytes = 0;
};

class MscBus {
 public:
  virtual ~MscBus() = default;
  virtual const std::vector<MscInfo>& mscs() const = 0;
  // 32-bit access at `offset` of MSC `msc`'s page. A failed access (EIO) is
  // a bus error; the MSC's own complaints go to its MPAMF_ESR instead.
  virtual Result<uint32_t> read32(size_t msc, uint32_t offset) = 0;
  virtual Result<void> write32(size_t msc, uint32_t offset, uint32_t value) = 0;
  Result<uint64_t> read64(size_t msc, uint32_t offset) {
    RESCTRLFS_ASSIGN_OR_RETURN(uint32_t lo, read32(msc, offset));
    RESCTRLFS_ASSIGN_OR_RETURN(uint32_t hi, read32(msc, offset + 4));
    return (static_cast<uint64_t>(hi) << 32) | lo;
  }
};

// The CPU side of MPAM: MPAMn_ELx's PARTID_D/PARTID_I and PMG_D/PMG_I.
// A CPU's default labels what runs there without its own (the kernel's
// per-CPU default); a thread's labels follow the thread.
struct MpamLabel {
  uint16_t partid_d = 0, partid_i = 0;
  uint8_t pmg_d = 0, pmg_i = 0;
  bool operator==(const MpamLabel&) const = default;
};

class MpamTagging {
 public:
  virtual ~MpamTagging() = default;
  virtual Result<void> set_cpu_label(unsigned cpu, MpamLabel label) = 0;
  virtual void set_thread_label(int tid, MpamLabel label) = 0;
  virtual void forget_thread(int tid) = 0;
};

}  // namespace resctrlfs::hw::mpam

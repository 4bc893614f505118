// Defines MscModel: the register file of one simulated MPAM memory-system
// component, as the Arm MPAM system component specification (IHI 0099)
// lays it out (hw/mpam/registers.h): the ID registers (MPAMF_IDR with
// PARTID_MAX, PMG_MAX and the HAS_* bits, MPAMF_CPOR_IDR, MPAMF_MBW_IDR,
// MPAMF_MSMON_IDR, MPAMF_CSUMON_IDR), the per-PARTID configuration that
// MPAMCFG_PART_SEL selects (MPAMCFG_CPBM, MPAMCFG_MBW_MAX) and the cache
// storage usage (CSU) monitors that MSMON_CFG_MON_SEL selects.
//
// What it enforces, as the specification has the MSC do:
//   - ID registers are read-only; an offset the MSC does not implement
//     reads 0 and ignores writes;
//   - MPAMCFG_PART_SEL beyond PARTID_MAX (or with INTERNAL set, no PARTID
//     narrowing here) records PARTID_SEL_RANGE in MPAMF_ESR, and the
//     configuration registers then read 0 and ignore writes;
//   - MSMON_CFG_MON_SEL beyond NUM_MON records MONITOR_RANGE; a CSU filter
//     with a PARTID or PMG beyond the maximum records MSMONCFG_ID_RANGE;
//   - MPAMCFG_CPBM bits at or beyond CPBM_WD are RES0; MPAMCFG_MBW_MAX keeps
//     only its BWA_WD most significant fraction bits (and HARDLIM);
//   - reset: every PARTID's CPBM all ones, MBW_MAX all ones in its
//     implemented bits (no limit).
// MSMON_CSU reads NRDY while its monitor is not enabled or is not a CSU
// monitor; otherwise the bytes of the cache the filter's PARTID (and PMG,
// with MATCH_PMG) hold, from the occupancy source.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace resctrlfs::hw::mpam {

struct MscParams {
  uint16_t partid_max = 0;
  uint8_t pmg_max = 0;
  unsigned cpbm_wd = 0;  // 0: no cache-portion partitioning
  unsigned bwa_wd = 0;   // with has_mbw_max: fraction bits of MBW_MAX
  bool has_mbw_max = false;
  unsigned csu_monitors = 0;  // 0: no CSU monitoring
};

class MscModel {
 public:
  // Bytes the cache holds for (partid, pmg); pmg empty: every PMG of it.
  using Occupancy = std::function<uint64_t(uint16_t partid, std::optional<uint8_t> pmg)>;
  MscModel(MscParams p, Occupancy occ);

  const MscParams& params() const { return p_; }
  uint32_t read32(uint32_t offset) const;
  void write32(uint32_t offset, uint32_t value);
  void reset();

  // For the occupancy model and register dumps.
  uint32_t cpbm(uint16_t partid) const;  // all ones below cpbm_wd when none
  uint32_t mbw_max(uint16_t partid) const;

 private:
  struct Mon {
    uint32_t flt = 0, ctl = 0;
  };
  uint64_t idr() const;
  bool sel_ok() const;
  void error(uint32_t code);
  uint32_t cpbm_word_mask(unsigned word) const;
  uint32_t mbw_max_keep() const;  // the implemented MBW_MAX fraction bits

  MscParams p_;
  Occupancy occ_;
  uint32_t part_sel_ = 0;
  uint32_t mon_sel_ = 0;
  uint64_t esr_ = 0;
  uint32_t ecr_ = 0;
  std::vector<std::vector<uint32_t>> cpbm_;  // [partid][word]
  std::vector<uint32_t> mbw_max_;
  std::vector<Mon> mons_;
};

}  // namespace resctrlfs::hw::mpam

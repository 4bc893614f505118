// Implements MscModel (see msc.h).
#include "hw/mpam/msc.h"

#include <utility>

#include "hw/mpam/registers.h"

namespace resctrlfs::hw::mpam {

MscModel::MscModel(MscParams p, Occupancy occ) : p_(p), occ_(std::move(occ)) {
  mons_.resize(p_.csu_monitors);
  reset();
}

void MscModel::reset() {
  const unsigned words = (p_.cpbm_wd + 31) / 32;
  cpbm_.assign(p_.partid_max + 1u, std::vector<uint32_t>(words, 0));
  for (auto& w : cpbm_)
    for (unsigned i = 0; i < words; ++i) w[i] = cpbm_word_mask(i);
  mbw_max_.assign(p_.partid_max + 1u, MPAMCFG_MBW_MAX_MAX & mbw_max_keep());
  for (Mon& m : mons_) m = Mon{};
  part_sel_ = mon_sel_ = 0;
  esr_ = 0;
}

uint32_t MscModel::cpbm_word_mask(unsigned word) const {
  if (p_.cpbm_wd >= (word + 1) * 32) return 0xffffffffU;
  if (p_.cpbm_wd <= word * 32) return 0;
  return (1U << (p_.cpbm_wd - word * 32)) - 1U;
}

uint32_t MscModel::mbw_max_keep() const {
  if (p_.bwa_wd >= 16) return MPAMCFG_MBW_MAX_MAX;
  return (MPAMCFG_MBW_MAX_MAX << (16 - p_.bwa_wd)) & MPAMCFG_MBW_MAX_MAX;
}

uint64_t MscModel::idr() const {
  uint64_t v = p_.partid_max | (static_cast<uint64_t>(p_.pmg_max) << MPAMF_IDR_PMG_MAX_SHIFT) |
               MPAMF_IDR_HAS_ESR;
  if (p_.cpbm_wd != 0) v |= MPAMF_IDR_HAS_CPOR_PART;
  if (p_.has_mbw_max) v |= MPAMF_IDR_HAS_MBW_PART;
  if (p_.csu_monitors != 0) v |= MPAMF_IDR_HAS_MSMON;
  return v;
}

bool MscModel::sel_ok() const {
  return (part_sel_ & MPAMCFG_PART_SEL_INTERNAL) == 0 &&
         (part_sel_ & MPAMCFG_PART_SEL_PARTID_SEL) <= p_.partid_max;
}

void MscModel::error(uint32_t code) {
  esr_ = (esr_ & ~MPAMF_ESR_ERRCODE) | (static_cast<uint64_t>(code) << MPAMF_ESR_ERRCODE_SHIFT);
}

uint32_t MscModel::cpbm(uint16_t partid) const {
  return partid <= p_.partid_max && !cpbm_[partid].empty() ? cpbm_[partid][0] : 0;
}

uint32_t MscModel::mbw_max(uint16_t partid) const {
  return partid <= p_.partid_max ? mbw_max_[partid] : 0;
}

uint32_t MscModel::read32(uint32_t off) const {
  const uint16_t partid = part_sel_ & MPAMCFG_PART_SEL_PARTID_SEL;
  switch (off) {
    case MPAMF_IDR:
      return static_cast<uint32_t>(idr());
    case MPAMF_IDR + 4:
      return static_cast<uint32_t>(idr() >> 32);
    case MPAMF_AIDR:
      return MPAM_ARCHITECTURE_V1;
    case MPAMF_CPOR_IDR:
      return p_.cpbm_wd & MPAMF_CPOR_IDR_CPBM_WD;
    case MPAMF_MBW_IDR:
      return p_.has_mbw_max ? ((p_.bwa_wd & MPAMF_MBW_IDR_BWA_WD) | MPAMF_MBW_IDR_HAS_MAX) : 0;
    case MPAMF_MSMON_IDR:
      return p_.csu_monitors != 0 ? MPAMF_MSMON_IDR_MSMON_CSU : 0;
    case MPAMF_CSUMON_IDR:
      return p_.csu_monitors & MPAMF_CSUMON_IDR_NUM_MON;
    case MPAMF_ECR:
      return ecr_;
    case MPAMF_ESR:
      return static_cast<uint32_t>(esr_);
    case MPAMF_ESR + 4:
      return static_cast<uint32_t>(esr_ >> 32);
    case MPAMCFG_PART_SEL:
      return part_sel_;
    case MPAMCFG_MBW_MAX:
      return p_.has_mbw_max && sel_ok() ? mbw_max_[partid] : 0;
    case MSMON_CFG_MON_SEL:
      return mon_sel_;
    default:
      break;
  }
  const uint32_t mon = mon_sel_ & MSMON_CFG_MON_SEL_MON_SEL;
  const bool mon_ok = mon < mons_.size();
  if (off == MSMON_CFG_CSU_FLT) return mon_ok ? mons_[mon].flt : 0;
  if (off == MSMON_CFG_CSU_CTL) return mon_ok ? mons_[mon].ctl : 0;
  if (off == MSMON_CSU) {
    if (!mon_ok) return MSMON___NRDY;
    const Mon& m = mons_[mon];
    if ((m.ctl & MSMON_CFG_x_CTL_EN) == 0 ||
        (m.ctl & MSMON_CFG_x_CTL_TYPE) != MSMON_CFG_CSU_CTL_TYPE_CSU)
      return MSMON___NRDY;
    uint64_t bytes = 0;
    const uint16_t f_partid = m.flt & MSMON_CFG_x_FLT_PARTID;
    const uint8_t f_pmg = (m.flt & MSMON_CFG_x_FLT_PMG) >> MSMON_CFG_x_FLT_PMG_SHIFT;
    if (m.ctl & MSMON_CFG_x_CTL_MATCH_PARTID) {
      std::optional<uint8_t> pmg;
      if (m.ctl & MSMON_CFG_x_CTL_MATCH_PMG) pmg = f_pmg;
      bytes = occ_(f_partid, pmg);
    } else {
      for (unsigned p = 0; p <= p_.partid_max; ++p) bytes += occ_(p, std::nullopt);
    }
    return static_cast<uint32_t>(bytes > MSMON___VALUE ? MSMON___VALUE : bytes);
  }
  const unsigned words = (p_.cpbm_wd + 31) / 32;
  if (off >= MPAMCFG_CPBM && off < MPAMCFG_CPBM + 4 * words && off % 4 == 0)
    return sel_ok() ? cpbm_[partid][(off - MPAMCFG_CPBM) / 4] : 0;
  return 0;
}

void MscModel::write32(uint32_t off, uint32_t v) {
  const uint16_t partid = part_sel_ & MPAMCFG_PART_SEL_PARTID_SEL;
  switch (off) {
    case MPAMF_ECR:
      ecr_ = v & 1U;
      return;
    case MPAMF_ESR:  // software clears the status
      esr_ = (esr_ & ~0xffffffffULL) | v;
      return;
    case MPAMF_ESR + 4:
      esr_ = (esr_ & 0xffffffffULL) | (static_cast<uint64_t>(v) << 32);
      return;
    case MPAMCFG_PART_SEL:
      part_sel_ = v;
      if (!sel_ok()) error(MPAM_ERRCODE_PARTID_SEL_RANGE);
      return;
    case MPAMCFG_MBW_MAX:
      if (p_.has_mbw_max && sel_ok()) {
        mbw_max_[partid] = (v & mbw_max_keep()) | (v & MPAMCFG_MBW_MAX_HARDLIM);
      }
      return;
    case MSMON_CFG_MON_SEL:
      mon_sel_ = v;
      if ((v & MSMON_CFG_MON_SEL_MON_SEL) >= mons_.size()) error(MPAM_ERRCODE_MONITOR_RANGE);
      return;
    default:
      break;
  }
  const uint32_t mon = mon_sel_ & MSMON_CFG_MON_SEL_MON_SEL;
  if (off == MSMON_CFG_CSU_FLT || off == MSMON_CFG_CSU_CTL) {
    if (mon >= mons_.size()) return;
    if (off == MSMON_CFG_CSU_FLT) {
      const unsigned f_partid = v & MSMON_CFG_x_FLT_PARTID;
      const unsigned f_pmg = (v & MSMON_CFG_x_FLT_PMG) >> MSMON_CFG_x_FLT_PMG_SHIFT;
      if (f_partid > p_.partid_max || f_pmg > p_.pmg_max) {
        error(MPAM_ERRCODE_MSMONCFG_ID_RANGE);
        return;
      }
      mons_[mon].flt = v & (MSMON_CFG_x_FLT_PARTID | MSMON_CFG_x_FLT_PMG);
    } else {
      mons_[mon].ctl = v & (MSMON_CFG_x_CTL_TYPE | MSMON_CFG_x_CTL_MATCH_PARTID |
                            MSMON_CFG_x_CTL_MATCH_PMG | MSMON_CFG_x_CTL_EN);
    }
    return;
  }
  const unsigned words = (p_.cpbm_wd + 31) / 32;
  if (off >= MPAMCFG_CPBM && off < MPAMCFG_CPBM + 4 * words && off % 4 == 0 && sel_ok()) {
    const unsigned w = (off - MPAMCFG_CPBM) / 4;
    cpbm_[partid][w] = v & cpbm_word_mask(w);
  }
}

}  // namespace resctrlfs::hw::mpam

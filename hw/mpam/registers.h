// Defines the MPAM memory-system component (MSC) registers hw/mpam/ uses:
// offsets in an MSC's memory-mapped page and their fields, spelled as the
// Arm MPAM system component specification (IHI 0099) spells them. Every
// register number and field of the MPAM code is here and nowhere else.
#pragma once

#include <cstdint>

namespace resctrlfs::hw::mpam {

// ID registers (read-only).
inline constexpr uint32_t MPAMF_IDR = 0x0000;  // 64-bit
inline constexpr uint32_t MPAMF_IIDR = 0x0018;
inline constexpr uint32_t MPAMF_AIDR = 0x0020;
inline constexpr uint32_t MPAMF_CPOR_IDR = 0x0030;
inline constexpr uint32_t MPAMF_CCAP_IDR = 0x0038;
inline constexpr uint32_t MPAMF_MBW_IDR = 0x0040;
inline constexpr uint32_t MPAMF_PRI_IDR = 0x0048;
inline constexpr uint32_t MPAMF_MSMON_IDR = 0x0080;
inline constexpr uint32_t MPAMF_CSUMON_IDR = 0x0088;
inline constexpr uint32_t MPAMF_MBWUMON_IDR = 0x0090;
inline constexpr uint32_t MPAMF_ECR = 0x00F0;
inline constexpr uint32_t MPAMF_ESR = 0x00F8;  // 64-bit

// Configuration registers, for the PARTID MPAMCFG_PART_SEL selects.
inline constexpr uint32_t MPAMCFG_PART_SEL = 0x0100;
inline constexpr uint32_t MPAMCFG_CMAX = 0x0108;
inline constexpr uint32_t MPAMCFG_MBW_MIN = 0x0200;
inline constexpr uint32_t MPAMCFG_MBW_MAX = 0x0208;
inline constexpr uint32_t MPAMCFG_CPBM = 0x1000;  // 32-bit words, CPBM_WD bits in all

// Monitors, for the monitor MSMON_CFG_MON_SEL selects.
inline constexpr uint32_t MSMON_CFG_MON_SEL = 0x0800;
inline constexpr uint32_t MSMON_CFG_CSU_FLT = 0x0810;
inline constexpr uint32_t MSMON_CFG_CSU_CTL = 0x0818;
inline constexpr uint32_t MSMON_CSU = 0x0840;

// MPAMF_IDR fields.
inline constexpr uint64_t MPAMF_IDR_PARTID_MAX = 0xffffULL;  // [15:0]
inline constexpr unsigned MPAMF_IDR_PMG_MAX_SHIFT = 16;      // [23:16]
inline constexpr uint64_t MPAMF_IDR_PMG_MAX = 0xffULL << 16;
inline constexpr uint64_t MPAMF_IDR_HAS_CCAP_PART = 1ULL << 24;
inline constexpr uint64_t MPAMF_IDR_HAS_CPOR_PART = 1ULL << 25;
inline constexpr uint64_t MPAMF_IDR_HAS_MBW_PART = 1ULL << 26;
inline constexpr uint64_t MPAMF_IDR_HAS_PRI_PART = 1ULL << 27;
inline constexpr uint64_t MPAMF_IDR_HAS_MSMON = 1ULL << 30;
inline constexpr uint64_t MPAMF_IDR_HAS_ESR = 1ULL << 39;

// MPAMF_CPOR_IDR / MPAMF_MBW_IDR / MPAMF_MSMON_IDR / MPAMF_CSUMON_IDR fields.
inline constexpr uint32_t MPAMF_CPOR_IDR_CPBM_WD = 0xffff;  // [15:0]
inline constexpr uint32_t MPAMF_MBW_IDR_BWA_WD = 0x3f;      // [5:0]
inline constexpr uint32_t MPAMF_MBW_IDR_HAS_MIN = 1U << 10;
inline constexpr uint32_t MPAMF_MBW_IDR_HAS_MAX = 1U << 11;
inline constexpr uint32_t MPAMF_MSMON_IDR_MSMON_CSU = 1U << 16;
inline constexpr uint32_t MPAMF_MSMON_IDR_MSMON_MBWU = 1U << 17;
inline constexpr uint32_t MPAMF_CSUMON_IDR_NUM_MON = 0xffff;  // [15:0]

// MPAMF_ESR fields and error codes.
inline constexpr unsigned MPAMF_ESR_ERRCODE_SHIFT = 24;  // [27:24]
inline constexpr uint64_t MPAMF_ESR_ERRCODE = 0xfULL << 24;
inline constexpr uint32_t MPAM_ERRCODE_PARTID_SEL_RANGE = 1;
inline constexpr uint32_t MPAM_ERRCODE_MSMONCFG_ID_RANGE = 3;
inline constexpr uint32_t MPAM_ERRCODE_MONITOR_RANGE = 5;

// MPAMCFG_PART_SEL / MPAMCFG_MBW_MAX fields.
inline constexpr uint32_t MPAMCFG_PART_SEL_PARTID_SEL = 0xffff;  // [15:0]
inline constexpr uint32_t MPAMCFG_PART_SEL_INTERNAL = 1U << 16;
inline constexpr uint32_t MPAMCFG_MBW_MAX_MAX = 0xffff;  // [15:0], a 0.16 fixed-point fraction
inline constexpr uint32_t MPAMCFG_MBW_MAX_HARDLIM = 1U << 31;

// Monitor fields.
inline constexpr uint32_t MSMON_CFG_MON_SEL_MON_SEL = 0xffff;  // [15:0]
inline constexpr uint32_t MSMON_CFG_x_FLT_PARTID = 0xffff;     // [15:0]
inline constexpr unsigned MSMON_CFG_x_FLT_PMG_SHIFT = 16;      // [23:16]
inline constexpr uint32_t MSMON_CFG_x_FLT_PMG = 0xffU << 16;
inline constexpr uint32_t MSMON_CFG_CSU_FLT_XCL = 1U << 31;
inline constexpr uint32_t MSMON_CFG_x_CTL_TYPE = 0xff;  // [7:0]
inline constexpr uint32_t MSMON_CFG_CSU_CTL_TYPE_CSU = 0x43;
inline constexpr uint32_t MSMON_CFG_x_CTL_MATCH_PARTID = 1U << 16;
inline constexpr uint32_t MSMON_CFG_x_CTL_MATCH_PMG = 1U << 17;
inline constexpr uint32_t MSMON_CFG_x_CTL_EN = 1U << 31;
inline constexpr uint32_t MSMON___VALUE = 0x7fffffff;  // [30:0]
inline constexpr uint32_t MSMON___NRDY = 1U << 31;

// The architecture version MPAMF_AIDR reports (v1.0).
inline constexpr uint32_t MPAM_ARCHITECTURE_V1 = 0x10;

}  // namespace resctrlfs::hw::mpam

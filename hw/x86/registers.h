// Defines every model-specific register number, register field and CPUID
// leaf/bit that resctrlfs uses for Intel RDT and AMD PQoS, in one place.
//
// Names follow the Intel SDM / RDT architecture specification and the AMD64
// Platform QoS Extensions document. Numbers were checked against those
// documents and against the Linux arch/x86 resctrl sources
// (msr-index.h, resctrl/internal.h, kernel/cpu/scattered.c).
#pragma once

#include <cstdint>

namespace resctrlfs::hw::x86 {

// ---------------------------------------------------------------------------
// Model-specific registers.

// L3_QOS_CFG (AMD: L3_QOS_CFG1): bit 0 enables L3 CDP.
inline constexpr uint32_t IA32_L3_QOS_CFG = 0xC81;
// L2_QOS_CFG: bit 0 enables L2 CDP.
inline constexpr uint32_t IA32_L2_QOS_CFG = 0xC82;
inline constexpr uint64_t QOS_CFG_CDP_ENABLE = 1ULL << 0;
// Intel non-CPU agent (I/O) RDT enable: IRAE (bit 0) allocation, IRME
// (bit 1) monitoring. Present when CPUID enumerates I/O RDT (below).
inline constexpr uint32_t IA32_L3_IO_RDT_CFG = 0xC83;
inline constexpr uint64_t L3_IO_RDT_CFG_IRAE = 1ULL << 0;
inline constexpr uint64_t L3_IO_RDT_CFG_IRME = 1ULL << 1;
// Intel MBA_CFG (model specific). On second-generation MBA parts bit 0
// selects the min (1) or the max (0, reset) of the delays of a core's
// threads; third-generation (per-thread) MBA removes it (RDT architecture
// specification, 3.2.3.2.2, Table 3-1). On the Resource-Aware MBA parts bit 2
// (RAMBAE) opts in to per-resource throttling, die scope, every other bit
// reserved (same specification, Resource-Aware MBA). A reserved bit: #GP(0).
inline constexpr uint32_t MBA_CFG = 0xC84;
inline constexpr uint64_t MBA_CFG_MIN = 1ULL << 0;
inline constexpr uint64_t MBA_CFG_RAMBAE = 1ULL << 2;

// Intel RMID_SNC_CONFIG (model specific, on the parts listed below): bit 0
// (RMID_LOCALIZED_DISTRIBUTION_MODE_ENABLE) is 1 at power-on, the default
// mode where each SNC node owns a contiguous slice of the physical RMIDs;
// clearing it selects RMID sharing mode, where the RMID in PQR_ASSOC is a
// logical RMID counted in physical RMID (logical + node index x RMIDs per
// node) of the node the traffic belongs to. Scope: the L3 cache (die).
inline constexpr uint32_t MSR_RMID_SNC_CONFIG = 0xCA0;
inline constexpr uint64_t RMID_SNC_CONFIG_LOCALIZED = 1ULL << 0;

// The monitoring keyhole: select (RMID, event) in QM_EVTSEL, read QM_CTR.
inline constexpr uint32_t IA32_QM_EVTSEL = 0xC8D;
inline constexpr uint32_t IA32_QM_CTR = 0xC8E;
// Per logical processor: RMID in the low half, CLOS in bits 63:32.
inline constexpr uint32_t IA32_PQR_ASSOC = 0xC8F;

// Bank of L3 capacity bitmasks, one per CLOS (CDP: 2c data, 2c+1 code).
inline constexpr uint32_t IA32_L3_MASK_0 = 0xC90;
inline constexpr uint32_t IA32_L3_MASK_LAST = 0xD0F;  // architectural range end
// Bank of L2 capacity bitmasks.
inline constexpr uint32_t IA32_L2_MASK_0 = 0xD10;
inline constexpr uint32_t IA32_L2_MASK_LAST = 0xD4F;
// Intel MBA delay values, one per CLOS (IA32_L2_QoS_Ext_BW_Thrtl_n).
inline constexpr uint32_t IA32_L2_QOS_EXT_BW_THRTL_0 = 0xD50;
inline constexpr uint32_t IA32_L2_QOS_EXT_BW_THRTL_LAST = 0xD8F;
// Intel Cache Bandwidth Allocation (CBA): IA32_QoS_Core_BW_Thrtl_n, one byte
// per CLOS (CLOS c in byte c mod 8 of register n = c / 8), n = 0 ..
// (CLOS count / 8) - 1; logical-processor scope; a byte above the maximum
// throttle level #GPs; 0 (reset) is unthrottled (RDT architecture
// specification 3.2.4.3 and Appendix A.5). The specification defers the
// register numbers to the SDM; 0xE00 and 0xE01 are what the SDM's
// architectural MSR table gives as public code reproduces it (EDK2-style
// MSR headers, the ACRN hypervisor's msr.h, cloud-hypervisor's CPU profile
// MSR list, all naming IA32_QOS_CORE_BW_THRTL_0/1 at 0xE00/0xE01). The byte
// layout is our reading of "a byte-encoded field for each CLOS" with the
// register count (CLOS_MAX+1)/8: no source spells it out; the natural one
// (CLOS 0 in bits 7:0) is taken.
inline constexpr uint32_t IA32_QOS_CORE_BW_THRTL_0 = 0xE00;
inline constexpr unsigned CBA_CLOS_PER_MSR = 8;
// Our bound on the bank: 8 registers, 64 CLOS, as many as the other banks
// hold (no source gives the range's end).
inline constexpr uint32_t IA32_QOS_CORE_BW_THRTL_LAST = 0xE07;

// AMD: L3 external read bandwidth limits, one per COS, 1/8 GB/s units.
inline constexpr uint32_t L3QOS_BW_CONTROL_0 = 0xC0000200;
// AMD: slow-memory (CXL) bandwidth limits, one per COS.
inline constexpr uint32_t L3QOS_SLOW_BW_CONTROL_0 = 0xC0000280;
// AMD ABMC: counter configuration (write-only in practice).
inline constexpr uint32_t L3_QOS_ABMC_CFG = 0xC00003FD;
// AMD ABMC: counter descriptor (read back a counter's configuration).
inline constexpr uint32_t L3_QOS_ABMC_DSC = 0xC00003FE;
// AMD: extended QoS configuration, per logical CPU; bit 0 enables ABMC,
// bit 1 enables SDCIAE (cache lines that I/O devices inject into the L3 are
// confined to the L3 mask of the highest CLOSID, the kernel's io_alloc).
inline constexpr uint32_t L3_QOS_EXT_CFG = 0xC00003FF;
inline constexpr uint64_t L3_QOS_EXT_CFG_ABMC_EN = 1ULL << 0;
inline constexpr uint64_t L3_QOS_EXT_CFG_SDCIAE_EN = 1ULL << 1;
// AMD BMEC: one event-configuration register per MBM event
// (index 0: mbm_total_bytes, index 1: mbm_local_bytes).
inline constexpr uint32_t QOS_EVT_CFG_0 = 0xC0000400;

// ---- STLB QoS (Intel, model specific; ours in the tree): the Intel RDT
// architecture specification, Appendix B ("STLB QoS"). CAT for the
// second-level TLB: the CLOS in a thread's PQR_ASSOC picks the way mask that
// applies when a TLB miss fills the 4K/2M STLB. Every register is core
// scope (one set per physical core, shared by its SMT threads).
//
// IA32_CORE_CAPABILITIES exists when CPUID.7.0:EDX[30] is set; its bit 0
// (read-only) says the core has STLB QoS.
inline constexpr uint32_t IA32_CORE_CAPABILITIES = 0xCF;
inline constexpr uint64_t CORE_CAPABILITIES_STLB_QOS = 1ULL << 0;
// STLB_QOS_INFO (read-only). NCLOS: the number of STLB CLOS minus one.
// The specification's table prints its bit range as "5.0"; we read it as
// bits 5:0 (the specification's example, NCLOS = 7, fits either that or
// 3:0, and STLB_FILL_TRANSLATION's 4-bit CLOS field would suggest 3:0; no
// other public source gives the layout). 4K_2M_CBM (19:16): mask length
// minus one. Bit 29: STLB_FILL_TRANSLATION is implemented. Bit 30: 4K and
// 2M translations share one structure. The other bits are reserved.
inline constexpr uint32_t STLB_QOS_INFO = 0x1A8F;
inline constexpr uint64_t STLB_QOS_INFO_NCLOS_MASK = 0x3F;
inline constexpr unsigned STLB_QOS_INFO_CBM_SHIFT = 16;
inline constexpr uint64_t STLB_QOS_INFO_CBM_MASK = 0xF;
inline constexpr uint64_t STLB_QOS_INFO_TRANSLATION_MSR = 1ULL << 29;
inline constexpr uint64_t STLB_QOS_INFO_4K_2M_ALIAS = 1ULL << 30;
// STLB_QOS_MASK_n = 0x1A90 + n for n <= NCLOS: WAY_MASK in bits 7:0, a
// contiguous run of ones; any other index #GPs. The mask field is 8 bits
// wide although 4K_2M_CBM could describe up to 16: a longer length than 8
// is refused by the decoder (no mask could hold it).
inline constexpr uint32_t STLB_QOS_MASK_0 = 0x1A90;
inline constexpr uint64_t STLB_QOS_MASK_WAY_MASK = 0xFF;
inline constexpr unsigned STLB_QOS_MAX_CBM_LEN = 8;
// STLB_FILL_TRANSLATION (write-only, present when STLB_QOS_INFO bit 29 is
// set): bits 3:0 CLOS, bit 10 X (executable page), bit 11 RW (writable
// page), bits 63:12 the linear address to fill; bits 9:4 are reserved.
inline constexpr uint32_t STLB_FILL_TRANSLATION = 0x1A8E;
inline constexpr uint64_t STLB_FILL_CLOS_MASK = 0xF;
inline constexpr uint64_t STLB_FILL_RESERVED = 0x3F0;

// Hardware prefetcher control (Intel, per core). Not an RDT register, but
// the cache pseudo-locking sequence turns prefetchers off through it on the
// locking CPU while the region is loaded, then restores the saved value.
// Which bits exist depends on the model (see prefetch_disable_bits()).
inline constexpr uint32_t MSR_MISC_FEATURE_CONTROL = 0x1A4;
// Broadwell server: bit 0 L2 hardware prefetcher, bit 1 L2 adjacent line
// prefetcher, bit 2 DCU hardware prefetcher, bit 3 DCU IP prefetcher.
inline constexpr uint64_t MISC_FEATURE_PREFETCH_DISABLE_BDX = 0xF;
// Goldmont / Goldmont Plus: bit 0 L2 hardware prefetcher, bit 2 DCU
// hardware prefetcher (bit 1 reserved).
inline constexpr uint64_t MISC_FEATURE_PREFETCH_DISABLE_GLM = 0x5;

// Not an RDT register: used by tests to prove the broker refuses it.
inline constexpr uint32_t IA32_LSTAR = 0xC0000082;

// AMD Lightweight Profiling (family 15h only; Linux's msr-index.h names
// them and nothing programs them). LWP_CFG: bits 31:0 the OS's enable mask
// in the layout of CPUID 8000_001Ch EAX (Xen's SVM code faults a guest
// setting a bit that 8000_001Ch EDX lacks), bits 39:32 the COREID written
// into byte 1 of every record (an out-of-tree Linux perf LWP driver notes
// that this byte of the MSR is copied into the records), bits 47:40 the
// threshold-interrupt vector (Xen delivers the LWP interrupt on
// LWP_CFG[47:40]). LWP_CBADDR: the
// linear address of the current thread's LWP control block (what SLWPCB
// returns). The 2007 proposal calls them LWPMSR0 (bits 31:0 only) and
// LWPMSR1 and gives no addresses. Not RDT registers: the broker refuses
// both (no client programs LWP through us); the simulator has them on a
// platform whose CPUID has LWP (hw/sim/lwp_model.cc).
inline constexpr uint32_t MSR_AMD64_LWP_CFG = 0xC0000105;
inline constexpr uint32_t MSR_AMD64_LWP_CBADDR = 0xC0000106;
inline constexpr unsigned LWP_CFG_COREID_SHIFT = 32;
inline constexpr unsigned LWP_CFG_VECTOR_SHIFT = 40;

// ---------------------------------------------------------------------------
// Register fields.

// IA32_QM_EVTSEL: event id in bits 7:0, RMID in bits 63:32 (the SDM
// documents RMID at 41:32; wider RMIDs keep growing upwards). AMD ABMC
// reads set the ExtendedEvtID bit and put the counter id in the RMID field.
inline constexpr unsigned QM_EVTSEL_EVTID_SHIFT = 0;
inline constexpr uint64_t QM_EVTSEL_EVTID_MASK = 0xFF;
inline constexpr uint64_t QM_EVTSEL_EXTENDED_EVTID = 1ULL << 31;
inline constexpr unsigned QM_EVTSEL_RMID_SHIFT = 32;
inline constexpr uint32_t ABMC_EVT_ID = 1;  // event id of an ABMC counter read

// IA32_QM_CTR: the count in the low bits, Unavailable at 62, Error at 63.
inline constexpr uint64_t QM_CTR_ERROR = 1ULL << 63;
inline constexpr uint64_t QM_CTR_UNAVAILABLE = 1ULL << 62;
inline constexpr uint64_t QM_CTR_DATA_MASK = (1ULL << 62) - 1;
// Intel's optional Overflow bit: set when the selected incrementing counter
// wrapped since it was last read, cleared by the read; enumerated by
// CPUID.0xF.1:EAX[8] (Intel SDM, CPUID leaf 0FH sub-leaf 1; the RDT
// architecture specification, 7.1.1, describes the bit without its number).
// It sits above any counter width up to 61 bits, which is all software uses.
inline constexpr uint64_t QM_CTR_OVERFLOW = 1ULL << 61;

// IA32_PQR_ASSOC: RMID in the low 32 bits (implemented width 10 bits on
// most parts), CLOS in bits 63:32.
inline constexpr unsigned PQR_ASSOC_CLOS_SHIFT = 32;
inline constexpr uint64_t PQR_ASSOC_RMID_MASK = 0xFFFFFFFFULL;

// L3_QOS_ABMC_CFG (AMD), bit layout:
//   31:0 BwType (BMEC transaction mask), 43:32 BwSrc (RMID or CLOSID),
//   47 IsCLOS, 52:48 CtrID, 62 CtrEn, 63 CfgEn.
inline constexpr unsigned ABMC_CFG_BW_TYPE_SHIFT = 0;
inline constexpr uint64_t ABMC_CFG_BW_TYPE_MASK = 0xFFFFFFFFULL;
inline constexpr unsigned ABMC_CFG_BW_SRC_SHIFT = 32;
inline constexpr uint64_t ABMC_CFG_BW_SRC_MASK = 0xFFF;
inline constexpr uint64_t ABMC_CFG_IS_CLOS = 1ULL << 47;
inline constexpr unsigned ABMC_CFG_CTR_ID_SHIFT = 48;
inline constexpr uint64_t ABMC_CFG_CTR_ID_MASK = 0x1F;
inline constexpr uint64_t ABMC_CFG_CTR_EN = 1ULL << 62;
inline constexpr uint64_t ABMC_CFG_CFG_EN = 1ULL << 63;

// BMEC transaction bits (QOS_EVT_CFG_n and ABMC BwType).
inline constexpr uint32_t BMEC_READS_TO_LOCAL_MEM = 1U << 0;
inline constexpr uint32_t BMEC_READS_TO_REMOTE_MEM = 1U << 1;
inline constexpr uint32_t BMEC_NON_TEMP_WRITE_TO_LOCAL_MEM = 1U << 2;
inline constexpr uint32_t BMEC_NON_TEMP_WRITE_TO_REMOTE_MEM = 1U << 3;
inline constexpr uint32_t BMEC_READS_TO_LOCAL_S_MEM = 1U << 4;
inline constexpr uint32_t BMEC_READS_TO_REMOTE_S_MEM = 1U << 5;
inline constexpr uint32_t BMEC_DIRTY_VICTIMS_TO_ALL_MEM = 1U << 6;
inline constexpr uint32_t BMEC_MAX_EVT_CONFIG_BITS = 0x7F;
// Reset values of QOS_EVT_CFG_0 (total) and QOS_EVT_CFG_1 (local).
inline constexpr uint32_t BMEC_DEFAULT_TOTAL = 0x7F;
inline constexpr uint32_t BMEC_DEFAULT_LOCAL =
    BMEC_READS_TO_LOCAL_MEM | BMEC_NON_TEMP_WRITE_TO_LOCAL_MEM | BMEC_READS_TO_LOCAL_S_MEM;

// Monitoring event ids (IA32_QM_EVTSEL bits 7:0).
inline constexpr uint32_t QOS_L3_OCCUP_EVENT_ID = 1;
inline constexpr uint32_t QOS_L3_MBM_TOTAL_EVENT_ID = 2;
inline constexpr uint32_t QOS_L3_MBM_LOCAL_EVENT_ID = 3;

// MBM counter width = MBM_CNTR_WIDTH_BASE + CPUID.0xF.1:EAX[7:0]; AMD
// parts that report 0 have a 44-bit counter (offset 20). At most 62 bits,
// since bits 62 and 63 of QM_CTR are status bits.
inline constexpr unsigned MBM_CNTR_WIDTH_BASE = 24;
inline constexpr unsigned MBM_CNTR_WIDTH_OFFSET_AMD = 20;
inline constexpr unsigned MBM_CNTR_WIDTH_OFFSET_MAX = 62 - MBM_CNTR_WIDTH_BASE;

// Intel MBA: the schemata maximum (percent).
inline constexpr unsigned MAX_MBA_BW = 100;

// ---------------------------------------------------------------------------
// CPUID leaves and bits.

inline constexpr uint32_t CPUID_LEAF_VENDOR = 0x0;
inline constexpr uint32_t CPUID_LEAF_FMS = 0x1;
inline constexpr uint32_t CPUID_LEAF_CACHE_PARAMS = 0x4;  // Intel deterministic cache
inline constexpr uint32_t CPUID_LEAF_EXT_FEATURES = 0x7;  // subleaf 0
inline constexpr uint32_t CPUID_LEAF_PQM = 0xF;           // RDT monitoring
inline constexpr uint32_t CPUID_LEAF_PQE = 0x10;          // RDT allocation
inline constexpr uint32_t CPUID_LEAF_EXT_MAX = 0x80000000;
inline constexpr uint32_t CPUID_LEAF_AMD_EXT_FEATURES = 0x80000001;
// The processor brand string, 16 bytes per leaf (EAX, EBX, ECX, EDX).
inline constexpr uint32_t CPUID_LEAF_BRAND_FIRST = 0x80000002;
inline constexpr uint32_t CPUID_LEAF_BRAND_LAST = 0x80000004;
inline constexpr uint32_t CPUID_LEAF_AMD_L2_L3 = 0x80000006;  // ECX[31:16]: L2 KiB
inline constexpr uint32_t CPUID_LEAF_AMD_EXT_IDS = 0x80000008;
inline constexpr uint32_t CPUID_LEAF_AMD_LWP = 0x8000001C;  // LWP capabilities
inline constexpr uint32_t CPUID_LEAF_AMD_CACHE_TOPO = 0x8000001D;
inline constexpr uint32_t CPUID_LEAF_AMD_PQE_EXT = 0x80000020;

// CPUID.7.0:EBX
inline constexpr uint32_t CPUID_7_EBX_PQM = 1U << 12;  // RDT-M / PQM ("cqm")
inline constexpr uint32_t CPUID_7_EBX_PQE = 1U << 15;  // RDT-A / PQE ("rdt_a")
// CPUID.7.0:EDX bit 30: IA32_CORE_CAPABILITIES exists (STLB QoS, above).
inline constexpr uint32_t CPUID_7_EDX_CORE_CAPABILITIES = 1U << 30;
// CPUID.0xF.0:EDX bit 1: L3 monitoring; EBX: highest RMID of any resource.
inline constexpr uint32_t CPUID_F_0_EDX_L3 = 1U << 1;
// CPUID.0xF.1: EAX[7:0] counter width offset, EBX upscaling factor,
// ECX highest L3 RMID, EDX event bits (0 occupancy, 1 total, 2 local).
inline constexpr uint32_t CPUID_F_1_EAX_WIDTH_MASK = 0xFF;
inline constexpr uint32_t CPUID_F_1_EAX_OVERFLOW = 1U << 8;  // QM_CTR_OVERFLOW exists
// CPUID.0xF.1:EAX bits 9 and 10: CMT and MBM for non-CPU (I/O) agents.
inline constexpr uint32_t CPUID_F_1_EAX_IO_CMT = 1U << 9;
inline constexpr uint32_t CPUID_F_1_EAX_IO_MBM = 1U << 10;
inline constexpr uint32_t CPUID_F_1_EDX_OCCUP = 1U << 0;
inline constexpr uint32_t CPUID_F_1_EDX_MBM_TOTAL = 1U << 1;
inline constexpr uint32_t CPUID_F_1_EDX_MBM_LOCAL = 1U << 2;
// CPUID.0x10.0:EBX: resource bits.
inline constexpr uint32_t CPUID_10_0_EBX_L3 = 1U << 1;
inline constexpr uint32_t CPUID_10_0_EBX_L2 = 1U << 2;
inline constexpr uint32_t CPUID_10_0_EBX_MBA = 1U << 3;
// Bit 5 (ResID 5): Cache Bandwidth Allocation. The RDT architecture
// specification only says "a CPUID bit in the RDT allocation leaf"; bit 5
// and subleaf 5 are what intel-cmt-cat (pqos's hybrid capability code,
// CPUID 0x10 subleaf 5 "CBA") and generated SDM CPUID headers (the
// CPUID.10H.00H:EBX[5] gate of IA32_QOS_CORE_BW_THRTL_n) use.
inline constexpr uint32_t CPUID_10_0_EBX_CBA = 1U << 5;
// CPUID.0x10.{1,2}: EAX[4:0] CBM length - 1, EBX shareable bits,
// ECX bit 2 CDP, ECX bit 3 non-contiguous CBMs, EDX[15:0] highest CLOS.
inline constexpr uint32_t CPUID_10_CACHE_EAX_CBM_LEN_MASK = 0x1F;
inline constexpr uint32_t CPUID_10_CACHE_ECX_IO = 1U << 1;  // L3 CAT for I/O agents
inline constexpr uint32_t CPUID_10_CACHE_ECX_CDP = 1U << 2;
inline constexpr uint32_t CPUID_10_CACHE_ECX_NONCONT = 1U << 3;
inline constexpr uint32_t CPUID_10_EDX_COS_MAX_MASK = 0xFFFF;
// CPUID.0x10.3 (Intel MBA): EAX[11:0] max delay - 1, ECX bit 0 per-thread
// throttling, ECX bit 2 linear delay, EDX[15:0] highest CLOS.
inline constexpr uint32_t CPUID_10_3_EAX_MAX_DELAY_MASK = 0xFFF;
inline constexpr uint32_t CPUID_10_3_ECX_PER_THREAD = 1U << 0;
inline constexpr uint32_t CPUID_10_3_ECX_LINEAR = 1U << 2;
// CPUID.0x10.5 (Intel CBA), the field layout intel-cmt-cat decodes (and
// generated SDM CPUID headers agree): EAX[7:0] maximum throttle level, in
// the minus-one notation of the level count (levels 0..EAX[7:0]), EAX[11:8]
// bandwidth scope (which cache levels are throttled; not used), ECX
// bit 3 linear response, EDX[15:0] highest CLOS.
inline constexpr uint32_t CPUID_10_5_EAX_MAX_LEVEL_MASK = 0xFF;
inline constexpr unsigned CPUID_10_5_EAX_SCOPE_SHIFT = 8;
inline constexpr uint32_t CPUID_10_5_EAX_SCOPE_MASK = 0xF;
inline constexpr uint32_t CPUID_10_5_ECX_LINEAR = 1U << 3;
// CPUID.0x80000001:ECX bit 15: AMD Lightweight Profiling ("lwp").
inline constexpr uint32_t CPUID_80000001_ECX_LWP = 1U << 15;
// CPUID.0x80000008:EBX bit 6: AMD L3 bandwidth enforcement ("mba").
inline constexpr uint32_t CPUID_80000008_EBX_BE = 1U << 6;
// CPUID.0x80000020.0:EBX: bit 1 L3BE (MBA), bit 2 SMBA, bit 3 BMEC, bit 5 ABMC,
// bit 6 SDCIAE (L3 Smart Data Cache Injection Allocation Enforcement).
inline constexpr uint32_t CPUID_80000020_0_EBX_L3BE = 1U << 1;
inline constexpr uint32_t CPUID_80000020_0_EBX_SMBA = 1U << 2;
inline constexpr uint32_t CPUID_80000020_0_EBX_BMEC = 1U << 3;
inline constexpr uint32_t CPUID_80000020_0_EBX_ABMC = 1U << 5;
inline constexpr uint32_t CPUID_80000020_0_EBX_SDCIAE = 1U << 6;
// CPUID.0x80000020.{1,2}: EAX bandwidth field length, EDX highest COS.
// CPUID.0x80000020.3:ECX: BMEC supported transaction bits.
// CPUID.0x80000020.5:EBX[15:0]: ABMC counters - 1.
inline constexpr uint32_t CPUID_80000020_5_EBX_CNTRS_MASK = 0xFFFF;

// Intel models with MBM errata (SKX99, BDF102): family 6.
inline constexpr unsigned INTEL_FAM6_BROADWELL_X = 0x4F;
inline constexpr unsigned INTEL_FAM6_SKYLAKE_X = 0x55;
// Atom models validated for cache pseudo-locking (with Broadwell server).
inline constexpr unsigned INTEL_FAM6_ATOM_GOLDMONT = 0x5C;
inline constexpr unsigned INTEL_FAM6_ATOM_GOLDMONT_PLUS = 0x7A;
// Haswell server: L3 CAT present but not enumerated by CPUID.
inline constexpr unsigned INTEL_FAM6_HASWELL_X = 0x3F;
// Family-6 models that implement MSR_RMID_SNC_CONFIG, the only ones on which
// Linux looks for Sub-NUMA Clustering: Ice Lake-SP, Sapphire Rapids-SP,
// Emerald Rapids-SP, Granite Rapids-SP, Sierra Forest (Crestmont-X).
inline constexpr unsigned INTEL_FAM6_ICELAKE_X = 0x6A;
inline constexpr unsigned INTEL_FAM6_SAPPHIRERAPIDS_X = 0x8F;
inline constexpr unsigned INTEL_FAM6_EMERALDRAPIDS_X = 0xCF;
inline constexpr unsigned INTEL_FAM6_GRANITERAPIDS_X = 0xAD;
inline constexpr unsigned INTEL_FAM6_ATOM_CRESTMONT_X = 0xAF;
inline constexpr unsigned kSncModels[] = {INTEL_FAM6_ICELAKE_X, INTEL_FAM6_SAPPHIRERAPIDS_X,
                                          INTEL_FAM6_EMERALDRAPIDS_X, INTEL_FAM6_GRANITERAPIDS_X,
                                          INTEL_FAM6_ATOM_CRESTMONT_X};
// Family-6 models with the MBA_CFG min/max bit (second-generation MBA). The
// RDT architecture specification names 3rd-gen Xeon Scalable (Ice Lake-SP,
// and its -D variant) and the Atom P5000 series (Snow Ridge) for it (3.2.3.2);
// its Appendix A.2 also files 4th- and 5th-gen Xeon Scalable under
// second-generation MBA, so they are listed too. A part that enumerates
// per-thread MBA (CPUID.0x10.3:ECX[0]) has no min/max bit whatever its model.
inline constexpr unsigned INTEL_FAM6_ICELAKE_D = 0x6C;
inline constexpr unsigned INTEL_FAM6_ATOM_TREMONT_D = 0x86;
inline constexpr unsigned kMbaMinMaxModels[] = {
    INTEL_FAM6_ICELAKE_X, INTEL_FAM6_ICELAKE_D, INTEL_FAM6_ATOM_TREMONT_D,
    INTEL_FAM6_SAPPHIRERAPIDS_X, INTEL_FAM6_EMERALDRAPIDS_X};
// Family-6 models with Resource-Aware MBA (MBA_CFG bit 2): Granite Rapids
// and Sierra Forest (RDT architecture specification, Appendix A.2).
inline constexpr unsigned kRaMbaModels[] = {INTEL_FAM6_GRANITERAPIDS_X,
                                            INTEL_FAM6_ATOM_CRESTMONT_X};

// Parts with the model-specific, non-enumerated L3 CAT of Intel TCC SKUs
// (Intel RDT architecture specification, Appendix B, Table B-8). The table
// names parts by brand string; the family-6 model numbers of their product
// generations are the ones Linux's intel-family.h gives those generations
// (Elkhart Lake = Atom x6000E, Alder Lake-N = Atom x7000E, Tiger Lake
// UP3 and H, Alder Lake-S, Raptor Lake-P and -S).
inline constexpr unsigned INTEL_FAM6_ATOM_TREMONT = 0x96;    // Atom x6000E
inline constexpr unsigned INTEL_FAM6_ATOM_GRACEMONT = 0xBE;  // Atom x7000E
inline constexpr unsigned INTEL_FAM6_TIGERLAKE_L = 0x8C;     // 11th Gen Core UP3
inline constexpr unsigned INTEL_FAM6_TIGERLAKE = 0x8D;       // Xeon W-11000E (TGL-H)
inline constexpr unsigned INTEL_FAM6_ALDERLAKE = 0x97;       // 12th Gen Core S
inline constexpr unsigned INTEL_FAM6_RAPTORLAKE_P = 0xBA;    // 13th Gen Core P
inline constexpr unsigned INTEL_FAM6_RAPTORLAKE = 0xB7;      // 13th Gen Core S

}  // namespace resctrlfs::hw::x86

// Defines the ACPI IRDT table (Intel RDT for non-CPU agents, "I/O RDT"):
// its parser, which turns the firmware's blob into the list of tagging
// channels, and its builder, which the simulator and the tests use to make
// blobs from a description.
//
// Layout (Intel RDT architecture specification, chapter 5): a 48-byte header
// (the 36-byte ACPI header, I/O- and cache-protocol flags, 8 reserved bytes)
// followed by RMUDs (Resource Management Unit Descriptors, one per I/O
// block: type 0, a 4-byte length, the PCI segment, 13 bytes in all), each
// holding a mixed list of DSS (device scope, type 0: a device or a root port
// and the CHMS entries mapping its virtual channels to RCS channels) and RCS
// (resource control structure, type 1: one link with its channel count,
// tagging flags and the physical address of its CLOS/RMID register blocks)
// entries. A channel is named as the posted Linux RFC names it:
// (RMUD index << 16) | (RCS enumeration id << 8) | channel index.
//
// Decisions where the specification is silent or contradicts itself:
//  - REGW: the RCS table says a clear REGW flag means 8-byte registers, the
//    register chapter calls the blocks "contiguous blocks of 4B registers".
//    The width of a clear-REGW register is therefore a parameter of the
//    parser (IrdtParseOptions::wide_reg_bytes; 8, the table's, by default),
//    fixed per platform by the caller.
//  - The RMUD prose mentions minimum/maximum CLOS and RMID fields the table
//    does not have: the RMUD is read as 13 bytes and the CPUID limits apply.
//  - Reserved flag bits and reserved bytes are ignored (ACPI's rule for
//    readers), but every type, length, id and offset is checked.
//  - Only IRDT revision 1 is accepted: revision 2 gives Channel Count another
//    meaning (links of a bifurcated RCS) that this parser does not model.
//  - A channel is listed when at least one DSS maps a virtual channel to it
//    (as the RFC does); an RCS channel no device uses is not a channel.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace resctrlfs::hw::x86 {

inline constexpr size_t IRDT_HEADER_SIZE = 48;
inline constexpr size_t IRDT_RMUD_SIZE = 13;
inline constexpr size_t IRDT_DSS_SIZE = 8;
inline constexpr size_t IRDT_CHMS_SIZE = 16;
inline constexpr size_t IRDT_RCS_SIZE = 40;
inline constexpr uint8_t IRDT_REVISION = 1;

// Header flags (IO Protocol Flags / Cache Protocol Flags).
inline constexpr uint16_t IRDT_PROTO_MON = 1u << 0;
inline constexpr uint16_t IRDT_PROTO_CTL = 1u << 1;
// RCS flags.
inline constexpr uint16_t IRDT_RCS_RTS = 1u << 1;   // RMID tagging supported
inline constexpr uint16_t IRDT_RCS_CTS = 1u << 2;   // CLOS tagging supported
inline constexpr uint16_t IRDT_RCS_REGW = 1u << 3;  // 2-byte registers
// CHMS virtual-channel byte.
inline constexpr uint8_t IRDT_CHMS_VALID = 1u << 7;
inline constexpr uint8_t IRDT_CHMS_SHARED = 1u << 6;
inline constexpr uint8_t IRDT_CHMS_CHANNEL = 0x3f;

inline constexpr uint64_t IRDT_PAGE_SIZE = 4096;

enum class IoLinkType : uint8_t { kPcie = 0, kCxlCache = 1 };  // kPcie: PCIe or CXL.IO
enum class IoDeviceType : uint8_t { kRceip = 1, kRootPort = 2 };

// --- Description: the table's contents, field by field (builder input,
// parser output).

struct IrdtRcs {
  uint8_t id = 0;  // RCS enumeration id, unique within its RMUD
  IoLinkType link = IoLinkType::kPcie;
  uint8_t channel_count = 0;
  uint16_t flags = 0;  // IRDT_RCS_*
  uint16_t rmid_block_offset = 0;
  uint16_t clos_block_offset = 0;
  uint64_t mmio = 0;  // RCS Block MMIO Location (physical)
  bool operator==(const IrdtRcs&) const = default;
};

struct IrdtChms {
  uint8_t rcs_id = 0;
  std::array<uint8_t, 8> vc{};  // VC0..VC7: IRDT_CHMS_* bytes
  bool operator==(const IrdtChms&) const = default;
};

struct IrdtDss {
  IoDeviceType type = IoDeviceType::kRootPort;
  uint16_t bdf = 0;  // bus << 8 | device << 3 | function
  std::vector<IrdtChms> chms;
  bool operator==(const IrdtDss&) const = default;
};

struct IrdtRmud {
  uint16_t segment = 0;
  std::vector<IrdtRcs> rcs;
  std::vector<IrdtDss> dss;
  bool operator==(const IrdtRmud&) const = default;
};

struct IrdtDesc {
  uint8_t revision = IRDT_REVISION;
  uint16_t io_flags = 0;     // IRDT_PROTO_* for I/O-protocol agents
  uint16_t cache_flags = 0;  // IRDT_PROTO_* for coherent agents (CXL.Cache)
  std::string oem_id = "RCTLFS";
  std::vector<IrdtRmud> rmuds;
  bool operator==(const IrdtDesc&) const = default;
};

// --- The channel list.

struct IoDevice {
  uint16_t segment = 0;
  uint8_t bus = 0, device = 0, function = 0;
  uint8_t vc = 0;  // the device's virtual channel mapped to the channel
  IoDeviceType type = IoDeviceType::kRootPort;
  bool shared = false;  // the CHMS marked the channel shared with another DSS
  // "SSSS:BB:DD.F" (lower-case hex, as lspci -D prints it).
  std::string bdf() const;
  bool operator==(const IoDevice&) const = default;
};

struct IoChannel {
  uint32_t id = 0;    // (rmud << 16) | (rcs id << 8) | index
  unsigned rmud = 0;  // index of the RMUD in the table
  uint8_t rcs_id = 0;
  unsigned index = 0;  // channel index within the RCS's register blocks
  IoLinkType link = IoLinkType::kPcie;
  unsigned reg_bytes = 0;  // width of its IO_PQR_CLOS/IO_PQR_RMID registers
  bool rmid_tagging = false, clos_tagging = false;
  uint64_t clos_addr = 0, rmid_addr = 0;  // physical addresses of its registers
  std::vector<IoDevice> devices;          // in table order
  bool operator==(const IoChannel&) const = default;
};

// One RCS's CLOS or RMID register block.
struct IrdtRegisterBlock {
  uint64_t base = 0;  // physical address of register 0
  unsigned count = 0;
  unsigned reg_bytes = 0;
  uint64_t end() const { return base + uint64_t{count} * reg_bytes; }
  bool operator==(const IrdtRegisterBlock&) const = default;
};

struct IrdtTable {
  IrdtDesc desc;
  unsigned wide_reg_bytes = 8;  // the width a clear REGW meant when parsing
  // Every RCS's CLOS and RMID blocks (RCS order, CLOS first).
  std::vector<IrdtRegisterBlock> register_blocks() const;
  std::vector<IoChannel> channels;  // ordered by id
  // The 4 KiB pages holding every RCS's CLOS and RMID blocks, ascending:
  // the only physical memory I/O RDT needs to touch.
  std::vector<uint64_t> register_pages;
};

struct IrdtParseOptions {
  unsigned wide_reg_bytes = 8;  // register width when REGW is clear (4 or 8)
};

// Parses and validates a whole IRDT blob (as /sys/firmware/acpi/tables/IRDT
// holds it). Every malformation is refused with EINVAL and a message
// ("IRDT: ..." naming the offset); nothing is read outside `blob`.
Result<IrdtTable> parse_irdt(std::span<const uint8_t> blob, const IrdtParseOptions& opt = {});

// Builds the blob for `desc` (header, then per RMUD its RCS entries, then
// its DSS entries) with a correct length and checksum. Does not validate:
// tests build malformed tables from it.
std::vector<uint8_t> build_irdt(const IrdtDesc& desc);

// Human-readable name of a link type ("pcie", "cxl.cache").
const char* io_link_name(IoLinkType t);

}  // namespace resctrlfs::hw::x86

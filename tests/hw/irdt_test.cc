// Tests the ACPI IRDT parser (hw/x86/irdt.h): a well-formed table and the
// channel list it yields (ids, link types, widths, tagging, addresses,
// devices), then one malformed table per field the parser checks, every
// truncation of a good table, and a bad checksum. Each refusal is EINVAL
// with a message naming the offset.
#include <algorithm>
#include <catch2/catch.hpp>

#include "hw/x86/irdt.h"

using namespace resctrlfs;
using namespace resctrlfs::hw::x86;

namespace {

uint8_t vc(unsigned channel, bool shared = false) {
  return static_cast<uint8_t>(IRDT_CHMS_VALID | (shared ? IRDT_CHMS_SHARED : 0) | channel);
}

// One I/O block on segment 0: a PCIe RCS with 8 channels (2-byte registers)
// serving a NIC root port (VC0 -> ch 2, VC1 -> ch 3) and an NVMe root port
// (VC0 -> ch 5), and a CXL.Cache RCS (wide registers) for an accelerator.
IrdtDesc sample() {
  IrdtDesc d;
  d.io_flags = IRDT_PROTO_MON | IRDT_PROTO_CTL;
  d.cache_flags = IRDT_PROTO_MON | IRDT_PROTO_CTL;
  IrdtRmud r;
  r.segment = 0;
  r.rcs.push_back(IrdtRcs{1, IoLinkType::kPcie, 8, IRDT_RCS_RTS | IRDT_RCS_CTS | IRDT_RCS_REGW,
                          0x100, 0x0, 0xfed10000});
  r.rcs.push_back(
      IrdtRcs{2, IoLinkType::kCxlCache, 1, IRDT_RCS_RTS | IRDT_RCS_CTS, 0x208, 0x200, 0xfed10000});
  IrdtDss nic{IoDeviceType::kRootPort, 0x1600, {IrdtChms{1, {vc(2), vc(3)}}}};
  IrdtDss nvme{IoDeviceType::kRootPort, 0x3008, {IrdtChms{1, {vc(5)}}}};
  IrdtDss accel{IoDeviceType::kRceip, 0x8001, {IrdtChms{2, {vc(0), vc(7)}}}};
  r.dss = {nic, nvme, accel};
  d.rmuds.push_back(r);
  return d;
}

std::string refusal(const std::vector<uint8_t>& blob, const IrdtParseOptions& opt = {}) {
  auto t = parse_irdt(blob, opt);
  if (t.ok()) return "accepted";
  CHECK(t.error().code == EINVAL);
  CHECK(t.error().message.rfind("IRDT: ", 0) == 0);
  return t.error().message;
}

// Recomputes the checksum after a test edited the blob.
void fix_sum(std::vector<uint8_t>& b) {
  b[9] = 0;
  uint8_t s = 0;
  for (uint8_t c : b) s = static_cast<uint8_t>(s + c);
  b[9] = static_cast<uint8_t>(-s);
}

// Offsets in sample()'s blob.
constexpr size_t kRmud = IRDT_HEADER_SIZE;
constexpr size_t kRcs1 = kRmud + IRDT_RMUD_SIZE;
constexpr size_t kRcs2 = kRcs1 + IRDT_RCS_SIZE;
constexpr size_t kNic = kRcs2 + IRDT_RCS_SIZE;

}  // namespace

TEST_CASE("irdt: a well-formed table yields its channels", "[irdt]") {
  const auto blob = build_irdt(sample());
  auto t = parse_irdt(blob);
  REQUIRE(t.ok());
  CHECK(t->desc == sample());
  REQUIRE(t->channels.size() == 4);
  const IoChannel& a = t->channels[0];
  CHECK(a.id == 0x0102);
  CHECK(a.link == IoLinkType::kPcie);
  CHECK(a.index == 2);
  CHECK(a.reg_bytes == 2);
  CHECK(a.rmid_tagging);
  CHECK(a.clos_tagging);
  CHECK(a.clos_addr == 0xfed10000 + 2 * 2);
  CHECK(a.rmid_addr == 0xfed10100 + 2 * 2);
  REQUIRE(a.devices.size() == 1);
  CHECK(a.devices[0].bdf() == "0000:16:00.0");
  CHECK(a.devices[0].vc == 0);
  CHECK(t->channels[1].id == 0x0103);
  CHECK(t->channels[1].devices[0].vc == 1);
  CHECK(t->channels[2].id == 0x0105);
  CHECK(t->channels[2].devices[0].bdf() == "0000:30:01.0");
  // CXL.Cache: only VC0 counts (one channel), registers of the wide width.
  const IoChannel& x = t->channels[3];
  CHECK(x.id == 0x0200);
  CHECK(x.link == IoLinkType::kCxlCache);
  CHECK(x.reg_bytes == 8);
  CHECK(x.clos_addr == 0xfed10200);
  CHECK(x.rmid_addr == 0xfed10208);
  REQUIRE(x.devices.size() == 1);
  CHECK(x.devices[0].bdf() == "0000:80:00.1");
  CHECK(x.devices[0].type == IoDeviceType::kRceip);
  CHECK(t->register_pages == std::vector<uint64_t>{0xfed10000});

  // The platform decides the clear-REGW width.
  auto t4 = parse_irdt(blob, IrdtParseOptions{4});
  REQUIRE(t4.ok());
  CHECK(t4->channels[3].reg_bytes == 4);
  CHECK(t4->channels[3].rmid_addr == 0xfed10208);
  CHECK(!parse_irdt(blob, IrdtParseOptions{3}).ok());
}

TEST_CASE("irdt: shared channels, several RMUDs, pages, no RMUD", "[irdt]") {
  IrdtDesc d = sample();
  IrdtRmud r2;
  r2.segment = 1;
  r2.rcs.push_back(IrdtRcs{1, IoLinkType::kPcie, 4, IRDT_RCS_CTS, 0xff8, 0x0, 0x2000000000});
  r2.dss.push_back(IrdtDss{IoDeviceType::kRootPort, 0x0100, {IrdtChms{1, {vc(1, true)}}}});
  r2.dss.push_back(IrdtDss{IoDeviceType::kRootPort, 0x0200, {IrdtChms{1, {vc(1, true)}}}});
  d.rmuds.push_back(r2);
  auto t = parse_irdt(build_irdt(d));
  REQUIRE(t.ok());
  REQUIRE(t->channels.size() == 5);
  const IoChannel& s = t->channels[4];
  CHECK(s.id == 0x10101);
  CHECK(!s.rmid_tagging);
  CHECK(s.clos_tagging);
  REQUIRE(s.devices.size() == 2);
  CHECK(s.devices[0].bdf() == "0001:01:00.0");
  CHECK(s.devices[1].bdf() == "0001:02:00.0");
  CHECK(s.devices[1].shared);
  // The RMID block (8-byte registers at 0xff8) crosses into a second page.
  CHECK(t->register_pages == std::vector<uint64_t>{0xfed10000, 0x2000000000, 0x2000001000});

  IrdtDesc empty;
  auto e = parse_irdt(build_irdt(empty));
  REQUIRE(e.ok());
  CHECK(e->channels.empty());
  CHECK(e->register_pages.empty());
}

TEST_CASE("irdt: every truncation is refused", "[irdt]") {
  const auto blob = build_irdt(sample());
  for (size_t n = 0; n < blob.size(); ++n) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + n);
    INFO("length " << n);
    CHECK(refusal(cut) != "accepted");
    // Also with the header's length and checksum made to agree with the cut
    // (a bare header is a valid table without RMUDs).
    if (n > IRDT_HEADER_SIZE) {
      for (unsigned i = 0; i < 4; ++i) cut[4 + i] = static_cast<uint8_t>(n >> (8 * i));
      fix_sum(cut);
      CHECK(refusal(cut) != "accepted");
    }
  }
}

TEST_CASE("irdt: header fields", "[irdt]") {
  const auto good = build_irdt(sample());
  auto b = good;
  b[9] ^= 1;
  CHECK_THAT(refusal(b), Catch::Contains("offset 9: checksum"));
  b = good;
  b[0] = 'X';
  fix_sum(b);
  CHECK_THAT(refusal(b), Catch::Contains("signature"));
  b = good;
  b[8] = 2;
  fix_sum(b);
  CHECK_THAT(refusal(b), Catch::Contains("offset 8: revision 2"));
  b = good;
  b[4] += 1;  // length beyond the blob
  fix_sum(b);
  CHECK_THAT(refusal(b), Catch::Contains("offset 4: length"));
  b = good;
  b.push_back(0);  // blob longer than the table says
  fix_sum(b);
  CHECK_THAT(refusal(b), Catch::Contains("offset 4: length"));
  // Trailing bytes after the last RMUD, counted in the length.
  b = good;
  b.push_back(0);
  b[4] += 1;
  fix_sum(b);
  CHECK_THAT(refusal(b), Catch::Contains("RMUD truncated"));
}

TEST_CASE("irdt: an entry header cut short inside its RMUD", "[irdt]") {
  // The RMUD (and the table) grow by 1, 2 and 3 bytes after its last entry:
  // too few for the 4-byte type/length header of another entry, although
  // every length agrees and the checksum is right.
  const auto good = build_irdt(sample());
  for (unsigned extra = 1; extra < 4; ++extra) {
    INFO(extra << " bytes");
    auto b = good;
    b.insert(b.end(), extra, uint8_t{0});
    const uint32_t rmud_len = static_cast<uint32_t>(b.size() - kRmud);
    for (unsigned i = 0; i < 4; ++i) {
      b[4 + i] = static_cast<uint8_t>(b.size() >> (8 * i));
      b[kRmud + 4 + i] = static_cast<uint8_t>(rmud_len >> (8 * i));
    }
    fix_sum(b);
    CHECK(refusal(b) == "IRDT: offset " + std::to_string(good.size()) +
                            ": entry header truncated inside its RMUD");
  }
}

TEST_CASE("irdt: RMUD, DSS and RCS fields", "[irdt]") {
  const auto good = build_irdt(sample());
  auto edit = [&](size_t off, uint8_t v) {
    auto b = good;
    b[off] = v;
    fix_sum(b);
    return refusal(b);
  };
  CHECK_THAT(edit(kRmud, 3), Catch::Contains("is not an RMUD"));
  CHECK_THAT(edit(kRmud + 4, 12), Catch::Contains("RMUD length 12"));
  CHECK_THAT(edit(kRmud + 7, 1), Catch::Contains("does not fit the table"));
  // Entry types and lengths.
  CHECK_THAT(edit(kRcs1, 2), Catch::Contains("entry type 2"));
  CHECK_THAT(edit(kRcs1 + 1, 1), Catch::Contains("entry type 257"));
  CHECK_THAT(edit(kRcs1 + 2, 3), Catch::Contains("entry length 3"));
  CHECK_THAT(edit(kRcs1 + 3, 1), Catch::Contains("does not fit its RMUD"));
  CHECK_THAT(edit(kRcs1 + 2, 44), Catch::Contains("RCS length 44"));
  CHECK_THAT(edit(kNic + 2, 23), Catch::Contains("DSS length 23"));
  // RCS fields.
  CHECK_THAT(edit(kRcs1 + 4, 2), Catch::Contains("link interface type 2 is reserved"));
  CHECK_THAT(edit(kRcs1 + 5, 1), Catch::Contains("link interface type 256"));
  CHECK_THAT(edit(kRcs1 + 6, 2), Catch::Contains("enumeration id 2 is not unique"));
  CHECK_THAT(edit(kRcs1 + 7, 0), Catch::Contains("has no channels"));
  CHECK_THAT(edit(kRcs1 + 7, 65), Catch::Contains("more than 64"));
  CHECK_THAT(edit(kRcs2 + 7, 2), Catch::Contains("CXL.Cache RCS 2 has 2 channels"));
  CHECK_THAT(edit(kRcs2 + 12, 0x08), Catch::Contains("CLOS and RMID blocks overlap"));
  {
    auto b = good;
    std::fill_n(b.begin() + kRcs1 + 32, 8, uint8_t{0});
    fix_sum(b);
    CHECK_THAT(refusal(b), Catch::Contains("no MMIO location"));
    std::fill_n(b.begin() + kRcs1 + 32, 8, uint8_t{0xff});
    fix_sum(b);
    CHECK_THAT(refusal(b), Catch::Contains("beyond the address space"));
  }
  // DSS fields.
  CHECK_THAT(edit(kNic + 4, 0), Catch::Contains("device type 0 is reserved"));
  CHECK_THAT(edit(kNic + 4, 3), Catch::Contains("device type 3 is reserved"));
  // CHMS: an RCS that is not there, a channel the RCS does not have.
  CHECK_THAT(edit(kNic + 8, 9), Catch::Contains("names RCS 9"));
  CHECK_THAT(edit(kNic + 9, vc(8)), Catch::Contains("channel 8 of RCS 1, which has 8"));
  // Reserved bits and bytes are ignored; an invalid VC byte is skipped.
  CHECK(edit(kRcs1 + 14, 0xaa) == "accepted");
  CHECK(edit(kNic + 9 + 2, 0x3f) == "accepted");
  CHECK(edit(IRDT_HEADER_SIZE - 1, 0x55) == "accepted");
}

// Unit tests of hw/x86/lwp_format.h: the LWP event record and LWPCB codecs
// against byte vectors built by hand from the layouts of the 2007 LWP
// proposal (record figure, branch and DCache-miss tables, LWPCB figure)
// with the event ids of the shipped specification (AMD pub. 43724), both
// directions, plus the decoder's refusals and the JSON-lines form; and the
// proposal's own generation (its event ids, Table 1).
#include "hw/x86/lwp_format.h"

#include <catch2/catch.hpp>

namespace resctrlfs::lwp {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes enc(const Record& r) {
  Bytes b(kRecordSize);
  encode_record(r, b.data());
  return b;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Bytes kZero8(8, 0);

}  // namespace

TEST_CASE("branch-retired record matches its hand-built bytes") {
  // id 3, CoreId 5, bit 31 taken, bit 30 predicted, bit 29 prediction valid.
  const Bytes want = cat({{0x03, 0x05, 0x00, 0xE0, 0, 0, 0, 0},
                          {0x34, 0x12, 0x40, 0, 0, 0, 0, 0},
                          {0x00, 0x13, 0x40, 0, 0, 0, 0, 0},
                          kZero8});
  Record r = Record::branch(5, 0x401234, 0x401300, true, true, true);
  CHECK(enc(r) == want);
  Record d = decode_record(want.data());
  CHECK(d == r);
  CHECK(d.taken());
  CHECK(d.predicted());
  CHECK(d.prediction_valid());
  CHECK(d.data2 == 0x401300);
  CHECK(check_record(d).ok());
  // Not taken, no prediction information: only the address fields remain.
  Record n = Record::branch(0, 0x401234, 0x401239, false, false, false);
  CHECK(enc(n)[3] == 0x00);
}

TEST_CASE("DCache-miss record matches its hand-built bytes") {
  // id 4, CoreId 1, bits 31:29 = 3 (DRAM), bit 28 address valid; latency
  // 432 cycles in bytes 4-7; load at 0x401000; data at 0x7f0012345640.
  const Bytes want = cat({{0x04, 0x01, 0x00, 0x70, 0xB0, 0x01, 0x00, 0x00},
                          {0x00, 0x10, 0x40, 0, 0, 0, 0, 0},
                          {0x40, 0x56, 0x34, 0x12, 0x00, 0x7f, 0, 0},
                          kZero8});
  Record r = Record::dcache_miss(1, 0x401000, 432, kSrcDram, true, 0x7f0012345640);
  CHECK(enc(r) == want);
  Record d = decode_record(want.data());
  CHECK(d == r);
  CHECK(d.data_source() == kSrcDram);
  CHECK(d.data_address_valid());
  CHECK(d.latency() == 432);
  CHECK(check_record(d).ok());
  // Local L3 (source 1) without an address: bits 31:29 = 001 -> byte 3 = 0x20.
  Record l = Record::dcache_miss(0, 0x401000, 48, kSrcLocalCache, false, 0x1234);
  CHECK(enc(l)[3] == 0x20);
  CHECK(l.data2 == 0);
}

TEST_CASE("LWPINS, LWPVAL and instructions-retired records match their bytes") {
  const Bytes ins = cat({{0xFF, 0x00, 0xEF, 0xBE, 0xEF, 0xBE, 0xAD, 0xDE},
                         {0x00, 0x11, 0x40, 0, 0, 0, 0, 0},
                         {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11},
                         kZero8});
  Record r =
      Record::programmed(kProgrammedEvent, 0, 0x401100, 0xBEEF, 0xDEADBEEF, 0x1122334455667788);
  CHECK(enc(r) == ins);
  CHECK(decode_record(ins.data()) == r);
  Record v = Record::programmed(kProgrammedValue, 2, 0x401100, 7, 9, 11);
  CHECK(enc(v)[0] == 0x01);
  CHECK(enc(v)[1] == 0x02);
  const Bytes ir =
      cat({{0x02, 0x03, 0, 0, 0, 0, 0, 0}, {0x10, 0x10, 0x40, 0, 0, 0, 0, 0}, kZero8, kZero8});
  CHECK(enc(Record::simple(kInstructionsRetired, 3, 0x401010)) == ir);
  // Data3 (bytes 24-31) carries a timestamp when PTSC is on.
  Record t = Record::simple(kInstructionsRetired, 0, 0);
  t.data3 = 0x0102030405060708;
  CHECK(enc(t)[24] == 0x08);
  CHECK(enc(t)[31] == 0x01);
}

TEST_CASE("the record decoder refuses what LWP never writes") {
  auto refused = [](Bytes b) {
    auto r = decode_records(b.data(), b.size());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    return r.error().message;
  };
  Bytes good = enc(Record::simple(kInstructionsRetired, 0, 0x1000));
  Bytes b = good;
  b[0] = 0;
  CHECK(refused(b).find("event id 0") != std::string::npos);
  b = good;
  b[2] = 1;  // instructions retired has no flags
  CHECK(refused(b).find("reserved") != std::string::npos);
  b = enc(Record::branch(0, 1, 2, true, false, false));
  b[3] |= 0x10;  // record bit 28: reserved for branches
  refused(b);
  b = enc(Record::dcache_miss(0, 1, 16, kSrcDram, true, 64));
  b[3] = static_cast<uint8_t>((5 << 5) | 0x10);  // data source 5 is reserved
  CHECK(refused(b).find("data source") != std::string::npos);
  b = good;
  b[0] = 100;
  CHECK(refused(b).find("unknown event id 100") != std::string::npos);
  b = good;
  b.push_back(0);
  CHECK(refused(b).find("multiple of 32") != std::string::npos);
  // The second record is named in the message.
  b = cat({good, good});
  b[32] = 0;
  CHECK(refused(b).find("record 1 (offset 32)") != std::string::npos);
  // Several valid records round-trip through the file form.
  std::vector<Record> rs = {Record::simple(kInstructionsRetired, 1, 2),
                            Record::dcache_miss(3, 4, 160, kSrcRemoteCache, true, 0x40),
                            Record::branch(0, 8, 9, false, true, true)};
  std::string file = encode_records(rs);
  auto back = decode_records(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  REQUIRE(back.ok());
  CHECK(*back == rs);
}

TEST_CASE("LWPCB matches its hand-built bytes") {
  Lwpcb cb;
  cb.flags = Lwpcb::kFlagEn | Lwpcb::flag_of(kInstructionsRetired) | Lwpcb::flag_of(kDcacheMiss) |
             Lwpcb::kFlagInt;
  cb.buffer_size = 4096;
  cb.random = 3;
  cb.buffer_base = 0x7f0000100000;
  cb.head = 0x40;
  cb.tail = 0x20;
  cb.missed = 7;
  cb.threshold = 0x800;
  cb.min_latency = 4;
  cb.clf = true;
  cb.ram = true;
  cb.events = {{10000, kInstructionsRetired, 0x1234}, {500, kDcacheMiss, 0}};
  const Bytes want = cat({{0x15, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x30},
                          {0x00, 0x00, 0x10, 0x00, 0x00, 0x7f, 0x00, 0x00},
                          {0x40, 0, 0, 0, 0x20, 0, 0, 0},
                          {0x07, 0, 0, 0, 0, 0, 0, 0},
                          {0x00, 0x08, 0x00, 0x00, 0x04, 0x09, 0x00, 0x00},
                          {0x10, 0x27, 0x00, 0x08, 0x34, 0x12, 0x00, 0x00},
                          {0xF4, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00}});
  auto bytes = encode_lwpcb(cb);
  REQUIRE(bytes.ok());
  CHECK(Bytes(bytes->begin(), bytes->end()) == want);
  auto back = decode_lwpcb(want.data(), want.size(), 2);
  REQUIRE(back.ok());
  CHECK(*back == cb);
  // NDB is bit 63 of the filter word.
  cb.ndb = true;
  auto with_ndb = encode_lwpcb(cb);
  REQUIRE(with_ndb.ok());
  CHECK(static_cast<uint8_t>((*with_ndb)[39]) == 0x80);
}

TEST_CASE("LWPCB with the shipped event-slot offset, and its refusals") {
  Lwpcb cb;
  cb.events = {
      {100, kProgrammedValue, 1}, {200, kInstructionsRetired, 2}, {300, kBranchesRetired, 3}};
  auto b = encode_lwpcb(cb, 0x80);
  REQUIRE(b.ok());
  CHECK(b->size() == 0x98);  // the FX-8150's LwpCbSize, 19 quadwords
  for (size_t i = 40; i < 0x80; ++i) CHECK((*b)[i] == 0);
  auto back = decode_lwpcb(reinterpret_cast<const uint8_t*>(b->data()), b->size(), 3, 0x80);
  REQUIRE(back.ok());
  CHECK(*back == cb);

  Lwpcb wide;
  wide.buffer_size = 1U << 28;
  CHECK_FALSE(encode_lwpcb(wide).ok());
  wide = {};
  wide.events = {{kCounterMask + 1, 2, 0}};
  CHECK_FALSE(encode_lwpcb(wide).ok());
  CHECK_FALSE(encode_lwpcb(Lwpcb{}, 36).ok());

  Bytes raw(56, 0);
  CHECK_FALSE(decode_lwpcb(raw.data(), 47, 1).ok());  // too short for one slot
  raw[38] = 0x20;                                     // filter bit 53: reserved
  CHECK_FALSE(decode_lwpcb(raw.data(), raw.size(), 2).ok());
  raw[38] = 0;
  raw[47] = 0x04;  // slot 0 bit 58: reserved
  CHECK_FALSE(decode_lwpcb(raw.data(), raw.size(), 2).ok());
}

TEST_CASE("shipped-layout LWPCB matches its hand-built bytes") {
  // A buffer of 32 records at 0x70002000, branches retired (id 3, slot 2)
  // every 0x1ffffff, threshold interrupt on, no filters beyond the two
  // branch-kind bits 29 and 27; the head 0x40 and tail 0x20 show where the
  // hardware and the software are; 5 missed events.
  ShippedLwpcb cb;
  cb.flags = 0x80000008;
  cb.buffer_size = 1024;
  cb.buffer_base = 0x70002000;
  cb.head = 0x40;
  cb.missed = 5;
  cb.threshold = 512;
  cb.filters = 0x28000000;
  cb.base_ip = 0x400000;
  cb.limit_ip = 0x500000;
  cb.tail = 0x20;
  cb.events = {{0, 0}, {0, 0}, {0x1ffffff, 0x1234}};
  Bytes want(152, 0);
  const Bytes head = {0x08, 0x00, 0x00, 0x80, 0x00, 0x04, 0x00, 0x00,  // Flags, BufferSize
                      0x00, 0x20, 0x00, 0x70, 0,    0,    0,    0,     // BufferBase
                      0x40, 0,    0,    0,    0,    0,    0,    0,     // head, reserved
                      0x05, 0,    0,    0,    0,    0,    0,    0,     // MissedEvents
                      0x00, 0x02, 0,    0,    0x00, 0x00, 0x00, 0x28,  // Threshold, Filters
                      0x00, 0x00, 0x40, 0,    0,    0,    0,    0,     // BaseIP
                      0x00, 0x00, 0x50, 0,    0,    0,    0,    0,     // LimitIP
                      0,    0,    0,    0,    0,    0,    0,    0,     // reserved
                      0x20, 0,    0,    0};                            // tail
  std::copy(head.begin(), head.end(), want.begin());
  const Bytes slot2 = {0xff, 0xff, 0xff, 0x01, 0x34, 0x12, 0x00, 0x00};
  std::copy(slot2.begin(), slot2.end(), want.begin() + 128 + 16);
  auto b = encode_shipped_lwpcb(cb);
  REQUIRE(b.ok());
  CHECK(Bytes(b->begin(), b->end()) == want);
  auto back = decode_shipped_lwpcb(want.data(), want.size(), 3);
  REQUIRE(back.ok());
  CHECK(*back == cb);
}

TEST_CASE("shipped-layout LWPCB decoder refuses short blocks and reserved bytes") {
  Bytes raw(152, 0);
  CHECK(decode_shipped_lwpcb(raw.data(), raw.size(), 3).ok());
  CHECK_FALSE(decode_shipped_lwpcb(raw.data(), 151, 3).ok());
  CHECK_FALSE(decode_shipped_lwpcb(raw.data(), raw.size(), 3, 64).ok());   // inside the header
  CHECK_FALSE(decode_shipped_lwpcb(raw.data(), raw.size(), 3, 132).ok());  // not 8-aligned
  CHECK_FALSE(decode_shipped_lwpcb(raw.data(), raw.size(), 33).ok());
  CHECK_FALSE(encode_shipped_lwpcb(ShippedLwpcb{}, 40).ok());
  for (size_t at : {20, 23, 56, 63, 68, 72, 127}) {
    Bytes r = raw;
    r[at] = 1;
    auto d = decode_shipped_lwpcb(r.data(), r.size(), 3);
    CHECK_FALSE(d.ok());
    if (!d.ok()) CHECK(d.error().message.find("reserved") != std::string::npos);
  }
  // The slot offset a part reports is honoured: slots right after the header.
  ShippedLwpcb cb;
  cb.events = {{7, 8}};
  auto b = encode_shipped_lwpcb(cb, 72);
  REQUIRE(b.ok());
  CHECK(b->size() == 80);
  CHECK(static_cast<uint8_t>((*b)[72]) == 7);
  CHECK(static_cast<uint8_t>((*b)[76]) == 8);
}

TEST_CASE("records print as JSON lines with every field") {
  Record r = Record::dcache_miss(1, 0x401000, 432, kSrcDram, true, 0x7f0012345640);
  CHECK(record_json(r) ==
        "{\"event_id\":4,\"event\":\"dcache_miss\",\"core_id\":1,\"flags\":28672,\"data1\":432,"
        "\"ip\":\"0x401000\",\"data2\":\"0x7f0012345640\",\"data3\":0,\"latency\":432,"
        "\"data_source\":3,\"data_address_valid\":true,\"data_address\":\"0x7f0012345640\"}");
  Record b = Record::branch(0, 0x10, 0x20, /*taken=*/true, /*prd_valid=*/true, /*predicted=*/false);
  CHECK(record_json(b).find("\"taken\":true,\"prediction_valid\":true,\"predicted\":false") !=
        std::string::npos);
}

}  // namespace resctrlfs::lwp

namespace resctrlfs::lwp {

TEST_CASE("the proposal's generation: the event ids of its Table 1") {
  // The proposal's "Table 1: EventId values": 1 instructions retired, 2
  // branches retired, 3 DCache misses; nothing else (no LWPVAL, no LWPINS).
  const Generation p = Generation::kProposal;
  CHECK(event_id(p, Event::kInstructions) == 1);
  CHECK(event_id(p, Event::kBranches) == 2);
  CHECK(event_id(p, Event::kDcache) == 3);
  CHECK(event_id(p, Event::kValue) == 0);
  CHECK(event_name(1, p) == "instructions_retired");
  CHECK(event_name(2, p) == "branches_retired");
  CHECK(event_name(3, p) == "dcache_miss");
  CHECK(event_name(4, p).empty());
  CHECK(event_name(255, p).empty());
  // The shipped ids, one up, with LWPVAL at 1 and LWPINS at 255.
  const Generation s = Generation::kShipped;
  CHECK(event_id(s, Event::kValue) == 1);
  CHECK(event_id(s, Event::kInstructions) == 2);
  CHECK(event_id(s, Event::kBranches) == 3);
  CHECK(event_id(s, Event::kDcache) == 4);

  // A proposal branch record (Figure 3): byte 0 is 2; the same flag bits.
  Record br = Record::branch(1, 0x401000, 0x401100, true, true, false, p);
  CHECK(br.event_id == 2);
  CHECK(check_record(br, p).ok());
  // ... which in the shipped generation is an instructions-retired record
  // with reserved fields set.
  CHECK_FALSE(check_record(br, s).ok());
  // A proposal DCache-miss record (Figure 4): byte 0 is 3.
  Record dm = Record::dcache_miss(0, 0x401000, 208, kSrcDram, true, 0x7f0000001000, p);
  CHECK(dm.event_id == 3);
  CHECK(check_record(dm, p).ok());
  CHECK(record_json(dm, p).find("\"event\":\"dcache_miss\",") != std::string::npos);
  CHECK(record_json(dm, p).find("\"latency\":208") != std::string::npos);
  // Ids 4 and 255 do not exist in the proposal; its bytes 24-31 are
  // reserved (no timestamp).
  Record four = Record::simple(4, 0, 0x401000);
  CHECK_FALSE(check_record(four, p).ok());
  CHECK(check_record(four, s).ok());
  Record ins = Record::programmed(kProgrammedEvent, 0, 0x401000, 1, 2, 3);
  CHECK_FALSE(check_record(ins, p).ok());
  Record stamped = Record::simple(1, 0, 0x401000);
  stamped.data3 = 5;
  CHECK_FALSE(check_record(stamped, p).ok());
  Bytes both = enc(br);
  Bytes more = enc(four);
  both.insert(both.end(), more.begin(), more.end());
  auto recs = decode_records(both.data(), both.size(), p);
  REQUIRE_FALSE(recs.ok());
  CHECK(recs.error().message.find("record 1") != std::string::npos);
}

}  // namespace resctrlfs::lwp

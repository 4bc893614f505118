// Tests RequestStats: opcode names, counting, reset, unknown opcodes.
#include <catch2/catch.hpp>

#include <linux/fuse.h>

#include <map>

#include "daemon/request_stats.h"

using resctrlfs::daemon::RequestStats;

TEST_CASE("names are the kernel's opcode names without FUSE_") {
  CHECK(std::string(RequestStats::opcode_name(FUSE_LOOKUP)) == "LOOKUP");
  CHECK(std::string(RequestStats::opcode_name(FUSE_FLUSH)) == "FLUSH");
  CHECK(std::string(RequestStats::opcode_name(FUSE_BATCH_FORGET)) == "BATCH_FORGET");
  CHECK(RequestStats::opcode_name(7) == nullptr);  // unused opcode number
  CHECK(RequestStats::opcode_name(CUSE_INIT) == nullptr);
}

TEST_CASE("counting, snapshot with zeros, reset") {
  RequestStats s;
  s.count(FUSE_OPEN);
  s.count(FUSE_READ);
  s.count(FUSE_READ);
  s.count(CUSE_INIT);
  s.count(7);
  std::map<std::string, uint64_t> m;
  for (const auto& [k, v] : s.snapshot()) m[k] = v;
  // Consumers index by name without checking presence.
  for (const char* name : {"LOOKUP", "GETATTR", "OPEN", "READ", "WRITE", "RELEASE", "FLUSH",
                           "SETATTR", "OPENDIR", "READDIR", "MKDIR", "RMDIR", "FORGET"}) {
    CHECK(m.count(name) == 1);
  }
  CHECK(m["OPEN"] == 1);
  CHECK(m["READ"] == 2);
  CHECK(m["OTHER"] == 2);
  CHECK(m["FLUSH"] == 0);
  CHECK(s.get("READ") == 2);
  s.reset();
  CHECK(s.get("READ") == 0);
  CHECK(s.get("OTHER") == 0);
}

// Tests of the CLOSID pool and the RMID pool with its LRU free list and
// per-domain limbo (fs/pools.h).
#include <catch2/catch.hpp>

#include "fs/pools.h"

namespace resctrlfs::fs {

TEST_CASE("closid pool: lowest free first, 0 reserved, ENOSPC when full", "[pools]") {
  ClosidPool p;
  p.init(4);
  CHECK(*p.alloc() == 1);
  CHECK(*p.alloc() == 2);
  p.free(1);
  CHECK(*p.alloc() == 1);
  CHECK(*p.alloc() == 3);
  auto r = p.alloc();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENOSPC);
  p.free(0);  // never freed
  CHECK(p.allocated(0));
}

TEST_CASE("rmid pool: LRU order, limbo, EBUSY vs ENOSPC", "[pools]") {
  RmidPool p;
  p.init(4, {0, 1}, true);
  CHECK(*p.alloc() == 1);  // A
  CHECK(*p.alloc() == 2);  // B
  p.free(1);               // A into limbo
  CHECK(*p.alloc() == 3);  // C gets 3, not 1
  auto r = p.alloc();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EBUSY);  // 1 is in limbo
  // Domain 0 clean, domain 1 still dirty: still in limbo.
  p.check_limbo(0, [](int, uint32_t) { return false; });
  CHECK(p.limbo_count() == 1);
  CHECK_FALSE(p.alloc().ok());
  p.check_limbo(1, [](int, uint32_t) { return false; });
  CHECK(p.limbo_count() == 0);
  CHECK(*p.alloc() == 1);
  auto full = p.alloc();
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().code == ENOSPC);
}

TEST_CASE("rmid pool: without limbo freed RMIDs go to the tail", "[pools]") {
  RmidPool p;
  p.init(4, {0}, false);
  CHECK(*p.alloc() == 1);
  p.free(1);
  CHECK(*p.alloc() == 2);
  CHECK(*p.alloc() == 3);
  CHECK(*p.alloc() == 1);
}

TEST_CASE("rmid pool: force_clear releases a domain's busy marks", "[pools]") {
  RmidPool p;
  p.init(3, {0}, true);
  CHECK(*p.alloc() == 1);
  p.free(1);
  CHECK(p.has_busy(0));
  p.force_clear(0);
  CHECK_FALSE(p.has_busy(0));
  CHECK(p.free_list().back() == 1);
}

}  // namespace resctrlfs::fs

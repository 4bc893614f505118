// Tests of the CLOSID pool and the RMID pool with its LRU free list and
// per-domain limbo (fs/pools.h).
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

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

namespace {

// What free() of each of `rmids` leaves, on a copy: the reference for
// after_freeing().
RmidPool::Released freed_for_real(RmidPool p, const std::vector<uint32_t>& rmids) {
  for (uint32_t r : rmids) p.free(r);
  RmidPool::Released out;
  out.free.assign(p.free_list().begin(), p.free_list().end());
  for (int d : p.domains()) {
    std::vector<uint32_t> busy = p.busy_in(d);
    if (!busy.empty()) out.limbo.emplace(d, std::move(busy));
  }
  return out;
}

}  // namespace

TEST_CASE("rmid pool: after_freeing is free() of each RMID on a copy", "[pools]") {
  std::mt19937 rng(7);
  for (bool limbo : {true, false}) {
    for (int round = 0; round < 200; ++round) {
      RmidPool p;
      p.init(64, round % 3 == 0 ? std::vector<int>{} : std::vector<int>{0, 2}, limbo);
      // A history of allocations, frees, limbo passes and a hotplug.
      std::vector<uint32_t> held;
      for (int step = 0; step < 80; ++step) {
        const unsigned op = rng() % 8;
        if (op < 4) {
          Result<uint32_t> r = p.alloc();
          if (r.ok()) held.push_back(*r);
        } else if (op < 6 && !held.empty()) {
          const size_t i = rng() % held.size();
          p.free(held[i]);
          held.erase(held.begin() + static_cast<long>(i));
        } else if (op == 6) {
          p.check_limbo(rng() % 2 == 0 ? 0 : 2, [&](int, uint32_t) { return rng() % 2 == 0; });
        } else if (round % 5 == 0 && step == 40) {
          p.remove_domain(2);
        }
      }
      std::shuffle(held.begin(), held.end(), rng);
      // Out-of-range numbers and RMID 0 are ignored, as by free().
      std::vector<uint32_t> release = held;
      release.push_back(0);
      release.push_back(999);
      const RmidPool before = p;
      const RmidPool::Released got = p.after_freeing(release);
      const RmidPool::Released want = freed_for_real(p, release);
      INFO("limbo " << limbo << ", round " << round);
      CHECK(got.free == want.free);
      CHECK(got.limbo == want.limbo);
      // The pool itself is left as it was.
      std::vector<uint32_t> a, b;
      p.append_state(a);
      before.append_state(b);
      CHECK(a == b);
    }
  }
}

}  // namespace resctrlfs::fs

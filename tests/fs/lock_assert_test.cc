// OwnedMutex (fs/lock_assert.h): it knows whether the calling thread holds
// it, which is what RESCTRLFS_ASSERT_HELD checks.
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "fs/lock_assert.h"

namespace resctrlfs::fs::internal {

TEST_CASE("lock assertions: OwnedMutex knows its holder", "[locking]") {
  OwnedMutex mu;
  CHECK_FALSE(mu.held_by_me());
  {
    std::lock_guard<OwnedMutex> lock(mu);
    CHECK(mu.held_by_me());
    bool other_sees_held = true;
    std::thread([&] { other_sees_held = mu.held_by_me(); }).join();
    CHECK_FALSE(other_sees_held);
    RESCTRLFS_ASSERT_HELD(&mu);  // held: no abort
  }
  CHECK_FALSE(mu.held_by_me());
  REQUIRE(mu.try_lock());
  CHECK(mu.held_by_me());
  mu.unlock();
  const OwnedMutex* none = nullptr;
  RESCTRLFS_ASSERT_HELD(none);  // a Model without locks checks nothing
}

}  // namespace resctrlfs::fs::internal

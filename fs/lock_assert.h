// Defines OwnedMutex, a std::mutex that knows which thread holds it, and
// RESCTRLFS_ASSERT_HELD, the analogue of the kernel's lockdep_assert_held:
// code that relies on a lock says so, and a build with lock assertions
// (the RESCTRLFS_LOCK_ASSERTS compile definition, on by default: CMake
// option of the same name) aborts with the place when the calling thread
// does not hold it. The cost is one relaxed atomic store per lock and
// unlock, and one load per assertion.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace resctrlfs::fs::internal {

class OwnedMutex {
 public:
  void lock() {
    mu_.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    mu_.unlock();
  }
  // Whether the calling thread holds the mutex (exact for the caller: only
  // the holder stores its own id, and clears it before unlocking).
  bool held_by_me() const {
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

 private:
  std::mutex mu_;
  std::atomic<std::thread::id> owner_{};
};

[[noreturn]] inline void lock_not_held(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: lock %s is not held by this thread\n", file, line, what);
  std::abort();
}

}  // namespace resctrlfs::fs::internal

#if defined(RESCTRLFS_LOCK_ASSERTS) && RESCTRLFS_LOCK_ASSERTS
#define RESCTRLFS_ASSERT_HELD(mu)                                        \
  do {                                                                   \
    if ((mu) != nullptr && !(mu)->held_by_me())                          \
      ::resctrlfs::fs::internal::lock_not_held(#mu, __FILE__, __LINE__); \
  } while (0)
#else
#define RESCTRLFS_ASSERT_HELD(mu) \
  do {                            \
  } while (0)
#endif

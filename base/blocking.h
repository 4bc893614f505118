// Defines BlockingSection and BlockingHook: a seam between code that waits
// on something slow outside the process (the MSR broker's round trip) and
// code further up the same thread that holds a lock the wait does not need.
//
// The holder installs a BlockingHook for its thread (ScopedBlockingHook);
// the waiting code marks its wait with a BlockingSection, which calls the
// hook's release() before the wait and reacquire() after it. Without a hook
// a BlockingSection does nothing. Sections do not nest: inside one, the
// thread has no hook until it ends.
//
// fs/ uses it to let go of its model lock while a command's register
// accesses travel to the broker (fs/impl.h, "Locking").
#pragma once

namespace resctrlfs {

class BlockingHook {
 public:
  // Called on the thread that installed the hook, in pairs.
  virtual void release() = 0;
  virtual void reacquire() = 0;

 protected:
  ~BlockingHook() = default;
};

namespace blocking_internal {
inline thread_local BlockingHook* t_hook = nullptr;
}  // namespace blocking_internal

// Installs `hook` for the calling thread for its lifetime (restoring what
// was installed before).
class ScopedBlockingHook {
 public:
  explicit ScopedBlockingHook(BlockingHook* hook) : prev_(blocking_internal::t_hook) {
    blocking_internal::t_hook = hook;
  }
  ~ScopedBlockingHook() { blocking_internal::t_hook = prev_; }
  ScopedBlockingHook(const ScopedBlockingHook&) = delete;
  ScopedBlockingHook& operator=(const ScopedBlockingHook&) = delete;

 private:
  BlockingHook* prev_;
};

// Marks a wait: the thread's hook (if any) is released for its lifetime.
class BlockingSection {
 public:
  BlockingSection() : hook_(blocking_internal::t_hook) {
    if (hook_ == nullptr) return;
    blocking_internal::t_hook = nullptr;
    hook_->release();
  }
  ~BlockingSection() {
    if (hook_ == nullptr) return;
    hook_->reacquire();
    blocking_internal::t_hook = hook_;
  }
  BlockingSection(const BlockingSection&) = delete;
  BlockingSection& operator=(const BlockingSection&) = delete;

 private:
  BlockingHook* hook_;
};

}  // namespace resctrlfs

// Defines InvalidationQueue, the fs::InvalidationSink of the daemon. fs/
// calls it from inside request handlers and timers (under its model lock),
// where telling the kernel would deadlock; the queue only records the
// request. The event loop takes the batch after the current FUSE request has
// been replied and hands it to FuseBridge, which tells the kernel.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "fs/filesystem.h"

namespace resctrlfs::daemon {

struct Invalidation {
  enum class Kind { kEntry, kInode };
  Kind kind = Kind::kInode;
  fs::Ino ino = 0;   // the parent directory for kEntry
  std::string name;  // kEntry only
};

class InvalidationQueue : public fs::InvalidationSink {
 public:
  void inval_entry(fs::Ino parent, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(Invalidation{Invalidation::Kind::kEntry, parent, name});
  }
  void inval_inode(fs::Ino ino) override {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(Invalidation{Invalidation::Kind::kInode, ino, {}});
  }
  // Everything queued so far, in order; the queue is left empty.
  std::vector<Invalidation> take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Invalidation> out;
    out.swap(items_);
    return out;
  }

 private:
  std::mutex mu_;  // leaf lock: nothing is called while holding it
  std::vector<Invalidation> items_;
};

}  // namespace resctrlfs::daemon

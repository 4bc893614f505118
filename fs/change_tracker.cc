// Implements ChangeTracker (see change_tracker.h).
#include "fs/change_tracker.h"

namespace resctrlfs::fs::internal {

namespace {
// Past this many marks a delta is no smaller than a snapshot is costly:
// the journal writes a snapshot instead.
constexpr size_t kMaxDeltaThreads = 1024;
constexpr size_t kMaxDeltaGroups = 64;
}  // namespace

GroupKey group_key(const Group& g) {
  if (g.type == GroupType::kMon) return {g.parent->name, g.name};
  return {g.name, std::string()};
}

void ChangeTracker::group(const Group* g) {
  if (full_ || g == nullptr) return;
  GroupKey k = group_key(*g);
  if (groups_seen_.count(k) != 0) return;
  if (groups_.size() >= kMaxDeltaGroups) {
    full_ = true;
    return;
  }
  groups_seen_.insert(k);
  groups_.push_back(std::move(k));
}

void ChangeTracker::gone(const GroupKey& k) {
  if (full_) return;
  if (removed_.size() >= kMaxDeltaGroups) {
    full_ = true;
    return;
  }
  removed_.insert(k);
}

void ChangeTracker::after_write(const Node& n) {
  if (full_ || n.row == nullptr) return;
  switch (n.row->changes) {
    case Changes::kMarkedByHandler:
      return;
    case Changes::kGroup:
      if (n.group != nullptr) {
        group(n.group);
        return;
      }
      break;
    case Changes::kAll:
      break;
  }
  all();
}

void ChangeTracker::thread(pid_t tid) {
  if (full_) return;
  if (threads_.size() >= kMaxDeltaThreads) {
    full_ = true;
    return;
  }
  threads_.insert(tid);
}

void ChangeTracker::reset() {
  full_ = false;
  groups_.clear();
  groups_seen_.clear();
  removed_.clear();
  threads_.clear();
}

}  // namespace resctrlfs::fs::internal

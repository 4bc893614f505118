// Defines ChangeTracker: what changed in the saved state since the journal
// last took a snapshot or a delta (FsImpl::take_state_*). It holds the
// groups to write again, the groups removed and the threads whose tags
// changed, or "everything" when a change is not one of those kinds or there
// are too many to be worth listing. Marks are recorded only while not
// "everything", so a daemon without a journal (which never takes them) pays
// one branch per change. Internal to fs/.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fs/model.h"

namespace resctrlfs::fs::internal {

// A group as the state document names it: (CTRL_MON name, MON name or "").
using GroupKey = std::pair<std::string, std::string>;
GroupKey group_key(const Group& g);

class ChangeTracker {
 public:
  // Group `g` (null: none) must be written again.
  void group(const Group* g);
  // The group named `k` was removed (or renamed away).
  void gone(const GroupKey& k);
  // Thread `tid`'s tags changed.
  void thread(pid_t tid);
  // Something else changed: the next take is a snapshot.
  void all() { full_ = true; }
  // After a write of file `n` (done, or failed part way): what its row's
  // `changes` column says the write changed.
  void after_write(const Node& n);
  // Starts afresh after a take.
  void reset();

  bool full() const { return full_; }
  bool empty() const { return groups_.empty() && removed_.empty() && threads_.empty(); }
  const std::vector<GroupKey>& groups() const { return groups_; }  // in marking order
  const std::set<GroupKey>& removed() const { return removed_; }
  const std::unordered_set<pid_t>& threads() const { return threads_; }

 private:
  bool full_ = true;
  std::vector<GroupKey> groups_;
  std::set<GroupKey> groups_seen_;
  std::set<GroupKey> removed_;
  std::unordered_set<pid_t> threads_;
};

}  // namespace resctrlfs::fs::internal

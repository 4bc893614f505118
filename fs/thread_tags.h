// Defines ThreadTags: the (CLOSID, RMID) each tagged thread carries, with
// indexes by CLOSID and by RMID (the keys a group's threads are matched
// on), so that moving a group's threads costs its threads, not every
// tagged thread of the machine. A thread without an entry carries (0, 0),
// the default group's tags. Internal to fs/.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace resctrlfs::fs::internal {

class ThreadTags {
 public:
  using Tags = std::pair<uint32_t, uint32_t>;  // (CLOSID, RMID)
  using Map = std::unordered_map<pid_t, Tags>;

  Tags get(pid_t tid) const;
  // Sets a thread's tags; (0, 0) forgets it.
  void set(pid_t tid, Tags tags);
  // Forgets a thread; whether it had tags.
  bool erase(pid_t tid);
  void clear();
  // Replaces every entry (threads that died unnoticed are dropped).
  void replace(Map tags);
  // The tagged threads carrying `closid` / `rmid`, or null when none.
  const std::unordered_set<pid_t>* with_closid(uint32_t closid) const;
  const std::unordered_set<pid_t>* with_rmid(uint32_t rmid) const;
  size_t size() const { return tags_.size(); }
  const Map& all() const { return tags_; }

 private:
  void index(pid_t tid, Tags old_tags, Tags new_tags);
  void rebuild_index();

  Map tags_;
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> by_closid_;
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> by_rmid_;
};

}  // namespace resctrlfs::fs::internal

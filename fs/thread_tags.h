// Defines ThreadTags: the (CLOSID, RMID) each tagged thread carries, with
// indexes by CLOSID and by RMID (the keys a group's threads are matched
// on), so that moving a group's threads costs its threads, not every
// tagged thread of the machine. A thread without an entry carries (0, 0),
// the default group's tags. Internal to fs/.
//
// LiveThreads: every live thread of the system (with its process), kept
// from fork/exec/exit events when they are reliable, so that a tasks file
// is listed without walking /proc. A process that exited stays in it until
// it is reaped (see LiveThreads::mark_exited). ThreadTags stamps each CLOSID and RMID
// whenever a thread carrying it changes, so that a group's rendered tasks
// text can be cached until one of its threads comes, goes or moves.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

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
  // Where a monitoring id depends on the CLOSID (hw::PlatformInfo::
  // rmid_depends_on_closid), a MON group's threads are those carrying its
  // (CLOSID, RMID) pair, as the kernel's resctrl_arch_match_rmid() on MPAM
  // matches both: `key` maps a pair to its RMID index. Set before any
  // thread is; without it the RMID alone is the key.
  void set_rmid_key(std::function<uint32_t(Tags)> key) { rmid_key_ = std::move(key); }
  // The tagged threads carrying `closid` / the MON group key of (`closid`,
  // `rmid`), or null when none.
  const std::unordered_set<pid_t>* with_closid(uint32_t closid) const;
  const std::unordered_set<pid_t>* with_rmid(uint32_t closid, uint32_t rmid) const;
  size_t size() const { return tags_.size(); }
  const Map& all() const { return tags_; }

  // A value that changes whenever a thread carrying `closid` (`rmid`)
  // changes: set, erased, born or dead (touch()), or when every entry does
  // (clear, replace, touch_all()).
  uint64_t closid_stamp(uint32_t closid) const { return stamp(closid_stamp_, closid); }
  uint64_t rmid_stamp(uint32_t closid, uint32_t rmid) const {
    return stamp(rmid_stamp_, rmid_key({closid, rmid}));
  }
  // A thread carrying `tags` was born or died.
  void touch(Tags tags);
  void touch_all() { epoch_ = ++counter_; }

 private:
  uint32_t rmid_key(Tags tags) const { return rmid_key_ ? rmid_key_(tags) : tags.second; }
  void index(pid_t tid, Tags old_tags, Tags new_tags);
  void rebuild_index();
  uint64_t stamp(const std::unordered_map<uint32_t, uint64_t>& m, uint32_t key) const {
    auto it = m.find(key);
    return it == m.end() || it->second < epoch_ ? epoch_ : it->second;
  }

  Map tags_;
  std::function<uint32_t(Tags)> rmid_key_;
  uint64_t counter_ = 1;
  uint64_t epoch_ = 1;
  std::unordered_map<uint32_t, uint64_t> closid_stamp_;
  std::unordered_map<uint32_t, uint64_t> rmid_stamp_;
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> by_closid_;
  std::unordered_map<uint32_t, std::unordered_set<pid_t>> by_rmid_;
};

// The live threads, when fork, exec and exit events keep them (tracking());
// otherwise empty, and the tasks files walk the TaskSource.
class LiveThreads {
 public:
  bool tracking() const { return tracking_; }
  void set_tracking(bool on);
  // Replaces every entry: (tid, tgid) pairs, tgid 0 when unknown.
  void assign(const std::vector<std::pair<pid_t, pid_t>>& threads);
  void add(pid_t tid, pid_t tgid);
  // Forgets a thread (also when it was marked exited); whether it was live.
  bool remove(pid_t tid);
  bool contains(pid_t tid) const { return tgid_.count(tid) != 0; }
  // The process of a live thread, 0 when unknown or not live.
  pid_t tgid_of(pid_t tid) const {
    auto it = tgid_.find(tid);
    return it == tgid_.end() ? 0 : it->second;
  }
  // A thread's exit was reported, but it may still be a zombie: a
  // process's leader stays on the kernel's task list (and in /proc, and in
  // the kernel's tasks files, in its group) from its exit until its parent
  // waits for it, which no event reports. It keeps its entry and its tags
  // until the task source says it is gone (exited()); remove(), a fork of
  // its id (reaped and reused) or an exec of its process (its id taken by
  // the exec'ing thread) unmarks it.
  void mark_exited(pid_t tid) { exited_.insert(tid); }
  void unmark_exited(pid_t tid) { exited_.erase(tid); }
  bool is_exited(pid_t tid) const { return exited_.count(tid) != 0; }
  const std::unordered_set<pid_t>& exited() const { return exited_; }
  // The other threads known to belong to process `tgid` (after an exec the
  // process has only its leader, whatever thread called exec).
  std::vector<pid_t> others_of(pid_t tgid) const;
  const std::unordered_map<pid_t, pid_t>& all() const { return tgid_; }
  size_t size() const { return tgid_.size(); }
  // How often the table was read again after lost events.
  uint64_t rescans() const { return rescans_; }
  void count_rescan() { ++rescans_; }
  // A rescan whose walk of the task source failed (out of descriptors or
  // memory) left the table as it was; it is tried again until one succeeds.
  bool rescan_pending() const { return rescan_pending_; }
  void set_rescan_pending(bool on) { rescan_pending_ = on; }
  uint64_t rescan_failures() const { return rescan_failures_; }
  void count_rescan_failure() { ++rescan_failures_; }

 private:
  bool tracking_ = false;
  uint64_t rescans_ = 0;
  bool rescan_pending_ = false;
  uint64_t rescan_failures_ = 0;
  std::unordered_map<pid_t, pid_t> tgid_;  // tid -> tgid (0: unknown)
  std::unordered_map<pid_t, std::unordered_set<pid_t>> by_tgid_;
  std::unordered_set<pid_t> exited_;  // exits reported, maybe zombies
};

// A group's tasks text as last rendered, with the stamp it was rendered at.
// The buffer is immutable: open fds keep the one they read as their
// snapshot, and a re-render replaces it with a new one.
struct TasksText {
  uint64_t stamp = 0;
  std::shared_ptr<const std::string> text;
};

}  // namespace resctrlfs::fs::internal

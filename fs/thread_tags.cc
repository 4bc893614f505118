// Implements ThreadTags (see thread_tags.h).
#include "fs/thread_tags.h"

namespace resctrlfs::fs::internal {

ThreadTags::Tags ThreadTags::get(pid_t tid) const {
  auto it = tags_.find(tid);
  return it == tags_.end() ? Tags{0, 0} : it->second;
}

void ThreadTags::touch(Tags tags) {
  const uint64_t now = ++counter_;
  closid_stamp_[tags.first] = now;
  rmid_stamp_[rmid_key(tags)] = now;
}

void ThreadTags::set(pid_t tid, Tags tags) {
  auto it = tags_.find(tid);
  const Tags old_tags = it == tags_.end() ? Tags{0, 0} : it->second;
  if (tags.first == 0 && tags.second == 0) {
    if (it != tags_.end()) tags_.erase(it);
  } else if (it != tags_.end()) {
    it->second = tags;
  } else {
    tags_.emplace(tid, tags);
  }
  index(tid, old_tags, tags);
}

bool ThreadTags::erase(pid_t tid) {
  auto it = tags_.find(tid);
  if (it == tags_.end()) return false;
  index(tid, it->second, {0, 0});
  tags_.erase(it);
  return true;
}

void ThreadTags::clear() {
  tags_.clear();
  touch_all();
  rebuild_index();
}

void ThreadTags::replace(Map tags) {
  tags_.swap(tags);
  touch_all();
  rebuild_index();
}

const std::unordered_set<pid_t>* ThreadTags::with_closid(uint32_t closid) const {
  auto it = by_closid_.find(closid);
  return it == by_closid_.end() ? nullptr : &it->second;
}

const std::unordered_set<pid_t>* ThreadTags::with_rmid(uint32_t closid, uint32_t rmid) const {
  auto it = by_rmid_.find(rmid_key({closid, rmid}));
  return it == by_rmid_.end() ? nullptr : &it->second;
}

void ThreadTags::index(pid_t tid, Tags old_tags, Tags new_tags) {
  if (old_tags == new_tags) return;
  touch(old_tags);
  touch(new_tags);
  auto drop = [tid](std::unordered_map<uint32_t, std::unordered_set<pid_t>>& idx, uint32_t key) {
    auto it = idx.find(key);
    if (it == idx.end()) return;
    it->second.erase(tid);
    if (it->second.empty()) idx.erase(it);
  };
  if (old_tags.first != 0 || old_tags.second != 0) {
    drop(by_closid_, old_tags.first);
    drop(by_rmid_, rmid_key(old_tags));
  }
  if (new_tags.first != 0 || new_tags.second != 0) {
    by_closid_[new_tags.first].insert(tid);
    by_rmid_[rmid_key(new_tags)].insert(tid);
  }
}

void ThreadTags::rebuild_index() {
  by_closid_.clear();
  by_rmid_.clear();
  for (auto& [tid, tags] : tags_) index(tid, {0, 0}, tags);
}

void LiveThreads::set_tracking(bool on) {
  tracking_ = on;
  if (!on) {
    assign({});
    rescan_pending_ = false;
  }
}

void LiveThreads::assign(const std::vector<std::pair<pid_t, pid_t>>& threads) {
  tgid_.clear();
  by_tgid_.clear();
  for (auto [tid, tgid] : threads) add(tid, tgid);
  // An exited thread the task source still shows is still a zombie: it is
  // looked for again until it is gone. (Without tracking nothing is kept.)
  std::erase_if(exited_, [this](pid_t tid) { return !contains(tid); });
}

void LiveThreads::add(pid_t tid, pid_t tgid) {
  auto [it, fresh] = tgid_.emplace(tid, tgid);
  if (!fresh) {
    if (tgid == 0 || it->second == tgid) return;
    if (it->second != 0) by_tgid_[it->second].erase(tid);
    it->second = tgid;
  }
  if (tgid != 0) by_tgid_[tgid].insert(tid);
}

bool LiveThreads::remove(pid_t tid) {
  exited_.erase(tid);
  auto it = tgid_.find(tid);
  if (it == tgid_.end()) return false;
  if (it->second != 0) {
    auto p = by_tgid_.find(it->second);
    if (p != by_tgid_.end()) {
      p->second.erase(tid);
      if (p->second.empty()) by_tgid_.erase(p);
    }
  }
  tgid_.erase(it);
  return true;
}

std::vector<pid_t> LiveThreads::others_of(pid_t tgid) const {
  std::vector<pid_t> out;
  auto p = by_tgid_.find(tgid);
  if (p == by_tgid_.end()) return out;
  for (pid_t tid : p->second)
    if (tid != tgid) out.push_back(tid);
  return out;
}

}  // namespace resctrlfs::fs::internal

// Implements group membership: the tasks file and the per-thread tags it
// sets (Groups, and FsImpl's fork/exit events), and the cpus and cpus_list
// files with the per-CPU association derived from CPU ownership
// (CpuOwners).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "fs/cpus.h"
#include "fs/file_rows.h"
#include "fs/impl.h"
#include "fs/kstr.h"

namespace resctrlfs::fs::internal {

// ---------------------------------------------------------------------------
// Tags

std::pair<uint32_t, uint32_t> CpuOwners::cpu_tags(unsigned cpu) const {
  if (m_.root == nullptr || cpu >= cpu_ctrl_.size()) return {0, 0};
  const Group* ctrl = cpu_ctrl(cpu);
  const Group* mon = cpu_mon_[cpu];
  return {ctrl->closid, mon != nullptr ? mon->rmid : ctrl->rmid};
}

void CpuOwners::reset() {
  cpu_assoc_.assign(m_.info.nr_cpus, {0, 0});
  cpu_assoc_valid_.assign(m_.info.nr_cpus, false);
  cpu_assoc_failed_.clear();
}

void CpuOwners::forget_owner(const Group* g) {
  for (unsigned cpu : g->cpus.cpus()) {
    if (cpu >= cpu_ctrl_.size()) continue;
    if (cpu_ctrl_[cpu] == g) cpu_ctrl_[cpu] = nullptr;
    if (cpu_mon_[cpu] == g) cpu_mon_[cpu] = nullptr;
  }
}

void CpuOwners::to_default(const CpuMask& cpus) {
  for (unsigned cpu : cpus.cpus()) {
    if (cpu >= cpu_ctrl_.size()) continue;
    cpu_ctrl_[cpu] = nullptr;
    cpu_mon_[cpu] = nullptr;
  }
}

void CpuOwners::cpu_gone(unsigned cpu) {
  // Exactly one CTRL_MON group owns the CPU, and at most one of its MON
  // groups: the owner tables name them.
  if (cpu < cpu_ctrl_.size()) {
    cpu_ctrl(cpu)->cpus.reset(cpu);
    m_.root->cpus.reset(cpu);
    if (Group* m = cpu_mon_[cpu]) m->cpus.reset(cpu);
    cpu_ctrl_[cpu] = nullptr;
    cpu_mon_[cpu] = nullptr;
  }
  if (cpu < cpu_assoc_valid_.size()) cpu_assoc_valid_[cpu] = false;
}

void CpuOwners::cpu_back(unsigned cpu) {
  // hw/ has written the default group's tags (0/0).
  if (cpu < cpu_assoc_.size()) {
    cpu_assoc_[cpu] = {0, 0};
    cpu_assoc_valid_[cpu] = true;
  }
}

void CpuOwners::rebuild_cpu_owners() {
  cpu_ctrl_.assign(m_.info.nr_cpus, nullptr);
  cpu_mon_.assign(m_.info.nr_cpus, nullptr);
  if (m_.root == nullptr) return;
  std::vector<bool> claimed(m_.info.nr_cpus, false);
  // The first holder in list order wins, as a search in that order finds.
  for (auto& g : m_.groups) {
    if (g->type != GroupType::kCtrlMon || g.get() == m_.root) continue;
    for (unsigned cpu : g->cpus.cpus()) {
      if (cpu >= claimed.size() || claimed[cpu]) continue;
      claimed[cpu] = true;
      cpu_ctrl_[cpu] = g.get();
    }
  }
  for (auto& g : m_.groups) {
    if (g->type != GroupType::kCtrlMon) continue;
    for (const Group* m : g->mon_children) {
      for (unsigned cpu : m->cpus.cpus()) {
        if (cpu >= cpu_mon_.size() || cpu_mon_[cpu] != nullptr || cpu_ctrl(cpu) != g.get())
          continue;
        cpu_mon_[cpu] = const_cast<Group*>(m);
      }
    }
  }
}

void CpuOwners::update_cpu_assoc() {
  rebuild_cpu_owners();
  update_cpu_assoc(m_.info.online);
}

void CpuOwners::update_cpu_assoc(const CpuMask& which) {
  // A CPU whose last write failed is retried by the next change, whichever
  // CPUs that change moves (a cpus write does not fail for it).
  std::vector<unsigned> retry;
  retry.swap(cpu_assoc_failed_);
  // Every CPU whose tags change, handed to hw/ as one batch.
  std::vector<hw::Arch::CpuAssoc> batch;
  std::vector<bool> queued(cpu_assoc_.size());
  auto want = [&](unsigned cpu) {
    if (cpu >= cpu_assoc_.size() || !m_.info.online.test(cpu) || queued[cpu]) return;
    auto tags = cpu_tags(cpu);
    if (cpu_assoc_valid_[cpu] && cpu_assoc_[cpu] == tags) return;
    queued[cpu] = true;
    batch.push_back({cpu, tags.first, tags.second, false});
  };
  for (unsigned cpu : retry) want(cpu);
  for (unsigned cpu : which.cpus()) want(cpu);
  if (batch.empty()) return;
  m_.assert_command_locked();
  m_.arch->set_cpus_assoc(batch);
  for (const auto& b : batch) {
    if (b.ok) {
      cpu_assoc_[b.cpu] = {b.closid, b.rmid};
      cpu_assoc_valid_[b.cpu] = true;
      continue;
    }
    cpu_assoc_valid_[b.cpu] = false;
    // Nothing in the interface reports it (a cpus write succeeds as in the
    // kernel, where the register write cannot fail): it is counted for
    // status and its text kept for the daemon's log.
    ++assoc_writes_failed_;
    if (assoc_failure_texts_.size() < kMaxPendingFailures)
      assoc_failure_texts_.push_back(b.error.empty() ? "CPU " + std::to_string(b.cpu) +
                                                           ": association write failed"
                                                     : b.error);
    if (std::find(cpu_assoc_failed_.begin(), cpu_assoc_failed_.end(), b.cpu) ==
        cpu_assoc_failed_.end())
      cpu_assoc_failed_.push_back(b.cpu);
  }
}

CpuMask CpuOwners::assoc_failing_cpus() const {
  CpuMask out(m_.info.nr_cpus);
  for (unsigned cpu : cpu_assoc_failed_)
    if (cpu < m_.info.nr_cpus && m_.info.online.test(cpu)) out.set(cpu);
  return out;
}

std::vector<std::string> CpuOwners::take_assoc_failures() {
  std::vector<std::string> out;
  out.swap(assoc_failure_texts_);
  return out;
}

void Groups::set_thread(pid_t tid, uint32_t closid, uint32_t rmid) {
  m_.threads.set(tid, {closid, rmid});
  m_.changes.thread(tid);
  if (hw::ThreadTagger* t = m_.arch->thread_tagger()) t->set_thread_tags(tid, closid, rmid);
}

void Groups::move_group_tasks(const Group* from, const Group* to) {
  // The group's threads by the key they are matched on: no walk over every
  // tagged thread of the machine.
  const std::unordered_set<pid_t>* tids = from->type == GroupType::kCtrlMon
                                              ? m_.threads.with_closid(from->closid)
                                              : m_.threads.with_rmid(from->closid, from->rmid);
  if (tids == nullptr) return;
  std::vector<pid_t> moving(tids->begin(), tids->end());
  for (pid_t tid : moving) set_thread(tid, to->closid, to->rmid);
}

void FsImpl::on_fork(pid_t parent_tid, pid_t child_tid) {
  on_thread_fork(parent_tid, child_tid, 0);
}

void FsImpl::on_thread_fork(pid_t parent_tid, pid_t child_tid, pid_t child_tgid) {
  std::lock_guard<OwnedMutex> lock(mu_);
  if (!m_.mounted) return;
  // The id of a zombie not yet seen reaped: the zombie is gone, this is a
  // new thread.
  if (m_.live.is_exited(child_tid)) p_.groups.thread_gone(child_tid);
  if (m_.live.tracking()) {
    m_.live.add(child_tid, child_tgid);
    m_.threads.touch({0, 0});  // a new untagged thread, or the default group's stamp anyway
  }
  auto tags = m_.threads.get(parent_tid);
  if (tags.first == 0 && tags.second == 0) {
    if (m_.threads.erase(child_tid)) m_.changes.thread(child_tid);
    return;
  }
  p_.groups.set_thread(child_tid, tags.first, tags.second);
}

void FsImpl::on_exit(pid_t tid) { on_thread_exit(tid, 0); }

void FsImpl::on_thread_exit(pid_t tid, pid_t tgid) {
  std::lock_guard<OwnedMutex> lock(mu_);
  if (m_.mounted) {
    // A process's leader is a zombie until its parent waits for it, listed
    // in its group meanwhile; so may be a thread of the table whose process
    // is not known. They are looked for again at the next listing and tick
    // (forget_reaped). Without tracking the walk of the task source lists
    // the zombie: only its tags are kept.
    const bool tracked = m_.live.tracking() && m_.live.contains(tid);
    // The kernel frees a thread's id (a thread other than its process's
    // first is reaped as it exits) before it reports the exit: a thread of
    // another process may have taken the id and been reported first. That
    // thread is live; the exit is its predecessor's.
    const pid_t known = m_.live.tgid_of(tid);
    if (tracked && tgid != 0 && known != 0 && known != tgid) return;
    const pid_t process = tgid != 0 ? tgid : known;
    const bool leader = process == tid || (process == 0 && tracked);
    const bool tagged = m_.threads.get(tid) != ThreadTags::Tags{0, 0};
    if (leader && (tracked || (!m_.live.tracking() && tagged))) {
      m_.live.mark_exited(tid);
      return;
    }
  }
  p_.groups.thread_gone(tid);
}

void FsImpl::on_exec(pid_t tgid) {
  std::lock_guard<OwnedMutex> lock(mu_);
  if (!m_.mounted || !m_.live.tracking()) return;
  // The thread that called exec took the process id; the old id of that
  // thread and every other thread are gone. The exec'ing thread keeps its
  // tags under its new id only if it was the leader (the table cannot tell
  // which other thread it was).
  for (pid_t tid : m_.live.others_of(tgid)) p_.groups.thread_gone(tid);
  // A leader that exited before another thread's exec is reaped by the
  // exec: the id is the exec'ing thread's now.
  m_.live.unmark_exited(tgid);
  m_.live.add(tgid, tgid);
  m_.threads.touch(m_.threads.get(tgid));
}

void FsImpl::track_threads(bool on) {
  std::lock_guard<OwnedMutex> lock(mu_);
  m_.live.set_tracking(on);
  m_.tasks_text.clear();
  if (on && m_.mounted) (void)p_.groups.rescan_threads();
}

void FsImpl::rescan_threads() {
  std::lock_guard<OwnedMutex> lock(mu_);
  if (!m_.mounted || !m_.live.tracking()) return;
  m_.live.count_rescan();
  (void)p_.groups.rescan_threads();
}

void Groups::thread_gone(pid_t tid) {
  const bool was_live = m_.live.remove(tid);
  if (m_.threads.erase(tid)) {
    m_.changes.thread(tid);
  } else if (was_live) {
    m_.threads.touch({0, 0});
  }
  if (hw::ThreadTagger* t = m_.arch->thread_tagger()) t->thread_exited(tid);
}

void Groups::forget_reaped() {
  if (m_.live.exited().empty()) return;
  std::vector<pid_t> reaped;
  // Only a lookup that says "no such thread" reaps: out of descriptors or
  // memory, the zombie stays until a later pass can tell.
  for (pid_t tid : m_.live.exited())
    if (m_.tasks == nullptr || m_.tasks->lookup(tid) == ESRCH) reaped.push_back(tid);
  for (pid_t tid : reaped) thread_gone(tid);
}

Result<void> Groups::rescan_threads() {
  std::vector<std::pair<pid_t, pid_t>> threads;
  if (m_.tasks != nullptr) {
    auto r = m_.tasks->all_threads_with_process();
    if (!r.ok()) {
      // The walk failed (no descriptor or memory left): a partial list
      // would make live threads look gone. The table stays as the events
      // left it, and the next tick or listing tries again.
      m_.live.set_rescan_pending(true);
      m_.live.count_rescan_failure();
      return std::move(r).error();
    }
    threads = std::move(r).value();
  }
  m_.live.set_rescan_pending(false);
  m_.live.assign(threads);
  // The processes that had exited already, their exit event before this
  // table (a daemon that started, or restored its journal, after it) or
  // lost: only the task source can tell when they are reaped, which each
  // listing and tick ask it (forget_reaped).
  if (m_.tasks != nullptr) {
    for (auto& [tid, tgid] : threads)
      if (tid == tgid && m_.tasks->zombie(tid)) m_.live.mark_exited(tid);
  }
  std::vector<pid_t> dead;
  for (auto& [tid, tags] : m_.threads.all())
    if (!m_.live.contains(tid)) dead.push_back(tid);
  for (pid_t tid : dead) thread_gone(tid);
  m_.threads.touch_all();
  m_.tasks_text.clear();
  return Ok();
}

// ---------------------------------------------------------------------------
// tasks

namespace {

// A task move whose /proc lookup failed without saying whether the thread
// exists (no descriptor or memory left): the write fails with that errno
// and says so, instead of ESRCH or EPERM for a thread that may be live.
Error lookup_failed(pid_t tid, int err) {
  return fail(err, "Cannot look up task " + std::to_string(tid) + ": " + std::strerror(err) +
                       "; try again\n");
}

void append_ids(std::string& out, std::vector<pid_t>& ids) {
  // Ascending thread ids: the order of a /proc walk for single-threaded
  // processes (the kernel's own order is its task list's, which user space
  // cannot see).
  std::sort(ids.begin(), ids.end());
  out.reserve(out.size() + ids.size() * 8);
  char buf[16];
  for (pid_t tid : ids) {
    auto r = std::to_chars(buf, buf + sizeof(buf) - 1, tid);
    *r.ptr++ = '\n';
    out.append(buf, r.ptr);
  }
}

}  // namespace

std::string task_ids_as_seen(std::string_view text, PidView& view) {
  std::vector<pid_t> ids;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    pid_t tid = 0;
    auto r = std::from_chars(line.data(), line.data() + line.size(), tid);
    if (r.ec != std::errc() || tid <= 0) continue;
    if (pid_t seen = view.from_daemon(tid); seen > 0) ids.push_back(seen);
  }
  std::string out;
  append_ids(out, ids);
  return out;
}

const std::shared_ptr<const std::string>& Groups::tracked_tasks_text(const Group* g) {
  // Zombies reaped since the last listing leave it now (no event says so).
  forget_reaped();
  const bool ctrl = g->type == GroupType::kCtrlMon;
  const uint64_t key = ctrl ? g->closid : (uint64_t{1} << 32) | mon_.rmid_idx(g->closid, g->rmid);
  const uint64_t stamp =
      ctrl ? m_.threads.closid_stamp(g->closid) : m_.threads.rmid_stamp(g->closid, g->rmid);
  TasksText& t = m_.tasks_text[key];
  if (t.stamp == stamp && stamp != 0 && t.text != nullptr) return t.text;
  std::vector<pid_t> ids;
  if (ctrl && g->closid == 0) {
    // The default group: every live thread without a CLOSID of its own.
    ids.reserve(m_.live.size());
    for (auto& [tid, tgid] : m_.live.all())
      if (tid != 0 && m_.threads.get(tid).first == 0) ids.push_back(tid);
  } else if (const std::unordered_set<pid_t>* tids =
                 ctrl ? m_.threads.with_closid(g->closid)
                      : m_.threads.with_rmid(g->closid, g->rmid)) {
    ids.reserve(tids->size());
    for (pid_t tid : *tids)
      if (tid != 0 && m_.live.contains(tid)) ids.push_back(tid);
  }
  // A new buffer: fds still reading the old one keep their snapshot.
  auto text = std::make_shared<std::string>();
  append_ids(*text, ids);
  t.text = std::move(text);
  t.stamp = stamp;
  return t.text;
}

Result<void> Groups::rescan_if_pending() {
  // The table missed events and could not be read again: a listing from it
  // could show dead threads or miss live ones, so the read fails with the
  // walk's errno until a rescan succeeds.
  if (m_.live.tracking() && m_.live.rescan_pending()) return rescan_threads();
  return Ok();
}

Result<std::shared_ptr<const std::string>> Groups::show_tasks_shared(const Node& n) {
  RESCTRLFS_RETURN_IF_ERROR(rescan_if_pending());
  if (m_.live.tracking()) return tracked_tasks_text(n.group);
  Result<std::string> r = show_tasks(n);
  if (!r.ok()) return std::move(r).error();
  return std::make_shared<const std::string>(std::move(r).value());
}

Result<std::string> Groups::show_tasks(const Node& n) {
  const Group* g = n.group;
  RESCTRLFS_RETURN_IF_ERROR(rescan_if_pending());
  if (m_.live.tracking()) return *tracked_tasks_text(g);
  std::string out;
  std::vector<pid_t> all;
  if (m_.tasks != nullptr) {
    // A walk that failed (EMFILE, ENFILE, ENOMEM) fails the read: a partial
    // list would show a wrong group and forget the tags of threads it missed.
    RESCTRLFS_ASSIGN_OR_RETURN(all, m_.tasks->all_threads());
  }
  std::unordered_map<pid_t, std::pair<uint32_t, uint32_t>> alive;
  for (pid_t tid : all) {
    auto tags = m_.threads.get(tid);
    if (tags.first != 0 || tags.second != 0) alive[tid] = tags;
    bool match = g->type == GroupType::kCtrlMon
                     ? tags.first == g->closid
                     : mon_.rmid_idx(tags.first, tags.second) == mon_.rmid_idx(g->closid, g->rmid);
    if (match && tid != 0) {
      out += std::to_string(tid);
      out += '\n';
    }
  }
  // Threads that died without an exit event are forgotten here.
  if (m_.tasks != nullptr && !all.empty() && alive.size() != m_.threads.size()) {
    for (auto& [tid, tags] : m_.threads.all()) {
      if (alive.count(tid) != 0) continue;
      if (hw::ThreadTagger* t = m_.arch->thread_tagger()) t->thread_exited(tid);
      m_.changes.thread(tid);
    }
    m_.threads.replace(std::move(alive));
  }
  return out;
}

Result<void> Groups::move_task(pid_t pid, Group* g, const Caller& c) {
  pid_t tid = pid;
  if (pid != 0) {
    // The id is the writer's: in another pid namespace it names another
    // thread, or none.
    if (c.pids != nullptr) tid = c.pids->to_daemon(pid);
    const int err = tid > 0 && m_.tasks != nullptr ? m_.tasks->lookup(tid) : ESRCH;
    if (err == ESRCH) return fail(ESRCH, "No task " + std::to_string(pid) + "\n");
    if (err != 0) return lookup_failed(pid, err);
  } else {
    tid = c.tid;
  }
  uid_t ruid = 0, suid = 0;
  if (c.uid != 0) {
    const int err = m_.tasks != nullptr ? m_.tasks->uids(tid, ruid, suid) : ESRCH;
    if (err != 0 && err != ESRCH) return lookup_failed(tid, err);
    if (err != 0 || (c.uid != ruid && c.uid != suid))
      return fail(EPERM, "No permission to move task " + std::to_string(tid) + "\n");
  }
  // A thread the events have not told of yet (its fork is still queued)
  // exists: it is live.
  if (m_.live.tracking() && !m_.live.contains(tid)) {
    m_.live.add(tid, 0);
    m_.threads.touch(m_.threads.get(tid));
  }
  auto tags = m_.threads.get(tid);
  if (g->type == GroupType::kCtrlMon) {
    if (tags.first == g->closid && tags.second == g->rmid) return Ok();
    set_thread(tid, g->closid, g->rmid);
  } else {
    if (tags.first == g->closid && tags.second == g->rmid) return Ok();
    if (tags.first != g->parent->closid)
      return fail(EINVAL, "Can't move task to different control group\n");
    set_thread(tid, g->parent->closid, g->rmid);
  }
  return Ok();
}

Result<void> Groups::write_tasks(Node& n, std::string_view data, const Caller& c) {
  Group* g = n.group;
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      g->mode == schemata::GroupMode::PSEUDO_LOCKED)
    return fail(EINVAL, "Pseudo-locking in progress\n");
  std::optional<std::string_view> buf = kstr::c_string(data);
  while (buf && !buf->empty() && (*buf)[0] != '\n') {
    std::string_view item = kstr::strim(kstr::strsep(buf, ","));
    int pid = 0;
    if (kstr::kstrtoint(item, 0, pid) != 0)
      return fail(EINVAL, "Task list parsing error pid " + std::string(item) + "\n");
    if (pid < 0) return fail(EINVAL, "Invalid pid " + std::to_string(pid) + "\n");
    Result<void> r = move_task(pid, g, c);
    if (!r.ok()) {
      return fail(r.error().code, std::string(user_text(r.error())) +
                                      "Error while processing task " + std::to_string(pid) + "\n");
    }
  }
  return Ok();
}

// ---------------------------------------------------------------------------
// cpus, cpus_list

// A pseudo-locked group shows the CPUs of the cache its region is on.
Result<std::string> CpuOwners::show_cpus(const Node& n) {
  const Group* g = n.group;
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(plock_.check_locked_domain(*g));
    return format_cpu_mask(plock_.ctrl_domain_cpus(
               m_.schemas.schemas[g->plr->schema].resource_index, g->plr->domain)) +
           "\n";
  }
  return format_cpu_mask(g->cpus) + "\n";
}

Result<std::string> CpuOwners::show_cpus_list(const Node& n) {
  const Group* g = n.group;
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKED && g->plr) {
    RESCTRLFS_RETURN_IF_ERROR(plock_.check_locked_domain(*g));
    return format_cpu_list(plock_.ctrl_domain_cpus(
               m_.schemas.schemas[g->plr->schema].resource_index, g->plr->domain)) +
           "\n";
  }
  return format_cpu_list(g->cpus) + "\n";
}

Result<void> CpuOwners::write_cpus(Node& n, std::string_view data, const Caller&) {
  return write_cpus_common(n, data, false);
}

Result<void> CpuOwners::write_cpus_list(Node& n, std::string_view data, const Caller&) {
  return write_cpus_common(n, data, true);
}

Result<void> CpuOwners::write_cpus_common(Node& n, std::string_view data, bool list) {
  Group* g = n.group;
  if (g->mode == schemata::GroupMode::PSEUDO_LOCKSETUP ||
      g->mode == schemata::GroupMode::PSEUDO_LOCKED)
    return fail(EINVAL, "Pseudo-locking in progress\n");
  Result<CpuMask> parsed =
      list ? parse_cpu_list(data, m_.info.nr_cpus) : parse_cpu_mask(data, m_.info.nr_cpus);
  if (!parsed.ok()) return fail(parsed.error().code, "Bad CPU list/mask\n");
  CpuMask newmask = *parsed;
  CpuMask offline = newmask;
  offline.subtract(m_.info.online);
  if (!offline.empty()) return fail(EINVAL, "Can only assign online CPUs\n");

  // Only the CPUs that change owner (and, for a CTRL_MON group, the CPUs of
  // its MON groups) are looked at: the owner tables name who held each one.
  CpuMask touched(m_.info.nr_cpus);
  // The journal records the groups whose CPUs changed (ChangeTracker::after_write).
  m_.changes.group(g);
  RESCTRLFS_RETURN_IF_ERROR(g->type == GroupType::kCtrlMon ? set_ctrl_cpus(g, newmask, touched)
                                                           : set_mon_cpus(g, newmask, touched));
  update_cpu_assoc(touched);
  return Ok();
}

// A CTRL_MON group's new CPUs: taken from their owners, dropped ones back
// to the default group; `touched` gets every CPU whose tags may change.
Result<void> CpuOwners::set_ctrl_cpus(Group* g, const CpuMask& newmask, CpuMask& touched) {
  CpuMask dropped = g->cpus;
  dropped.subtract(newmask);
  if (!dropped.empty()) {
    if (m_.is_root(g)) return fail(EINVAL, "Can't drop CPUs from default group\n");
    m_.root->cpus |= dropped;
    m_.changes.group(m_.root);
  }
  CpuMask added = newmask;
  added.subtract(g->cpus);
  // Every write clears the MON groups' CPUs, even an unchanged mask; a
  // MON group's CPUs are within its parent's, so the MON groups holding
  // any are the owners of the parent's CPUs.
  for (unsigned cpu : g->cpus.cpus()) {
    if (Group* m = cpu_mon_[cpu]; m != nullptr && m->parent == g) {
      m_.changes.group(m);
      m->cpus.clear();
      cpu_mon_[cpu] = nullptr;
      touched.set(cpu);
    }
  }
  for (unsigned cpu : dropped.cpus()) {
    cpu_ctrl_[cpu] = nullptr;
    touched.set(cpu);
  }
  for (unsigned cpu : added.cpus()) {
    // The CPU leaves its CTRL_MON group and that group's MON group.
    Group* owner = cpu_ctrl(cpu);
    if (owner != g) {
      owner->cpus.reset(cpu);
      m_.changes.group(owner);
    }
    if (!m_.is_root(g)) m_.root->cpus.reset(cpu);
    if (Group* m = cpu_mon_[cpu]) {
      m->cpus.reset(cpu);
      m_.changes.group(m);
    }
    cpu_ctrl_[cpu] = m_.is_root(g) ? nullptr : g;
    cpu_mon_[cpu] = nullptr;
    touched.set(cpu);
  }
  g->cpus = newmask;
  return Ok();
}

// A MON group's new CPUs, within its parent's: taken from the sibling
// monitoring them.
Result<void> CpuOwners::set_mon_cpus(Group* g, const CpuMask& newmask, CpuMask& touched) {
  Group* parent = g->parent;
  if (!newmask.subset_of(parent->cpus))
    return fail(EINVAL, "Can only add CPUs to mongroup that belong to parent\n");
  CpuMask added = newmask;
  added.subtract(g->cpus);
  CpuMask removed = g->cpus;
  removed.subtract(newmask);
  for (unsigned cpu : added.cpus()) {
    // Taken from the sibling monitoring it.
    if (Group* sib = cpu_mon_[cpu]; sib != nullptr && sib != g) {
      sib->cpus.reset(cpu);
      m_.changes.group(sib);
    }
    cpu_mon_[cpu] = g;
    touched.set(cpu);
  }
  for (unsigned cpu : removed.cpus()) {
    if (cpu_mon_[cpu] == g) cpu_mon_[cpu] = nullptr;
    touched.set(cpu);
  }
  g->cpus = newmask;
  return Ok();
}

// The rows of group directories for membership: tasks, cpus, cpus_list.
FileRows membership_file_rows() {
  static const FileRow kRows[] = {
      {.name = "tasks",
       .mode = 0644,
       .flags = kBase,
       .show = show_fn<&Groups::show_tasks>,
       .show_shared = show_shared_fn<&Groups::show_tasks_shared>,
       .write = write_fn<&Groups::write_tasks>,
       .read_status = true,
       .changes = Changes::kMarkedByHandler,
       .task_ids = true},
      {.name = "cpus",
       .mode = 0644,
       .flags = kBase,
       .show = show_fn<&CpuOwners::show_cpus>,
       .write = write_fn<&CpuOwners::write_cpus>,
       .read_status = true,
       .changes = Changes::kMarkedByHandler},
      {.name = "cpus_list",
       .mode = 0644,
       .flags = kBase,
       .show = show_fn<&CpuOwners::show_cpus_list>,
       .write = write_fn<&CpuOwners::write_cpus_list>,
       .read_status = true,
       .changes = Changes::kMarkedByHandler},
  };
  return kRows;
}

}  // namespace resctrlfs::fs::internal

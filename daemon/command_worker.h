// Defines CommandWorker: the daemon's one thread for commands — FUSE
// requests that may reach the hardware (handed over by FuseBridge, which
// replies from here), the 1000 ms tick with the journal and boot-state
// writes, and the control socket's commands. They run one at a time in the
// order they were posted, as the kernel runs them under rdtgroup_mutex,
// while the event loop's thread goes on serving the requests that need no
// register (fs/impl.h, "Locking").
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace resctrlfs::daemon {

class CommandWorker {
 public:
  using Job = std::function<void()>;

  CommandWorker() : thread_([this] { loop(); }) {}
  ~CommandWorker() { stop(); }
  CommandWorker(const CommandWorker&) = delete;
  CommandWorker& operator=(const CommandWorker&) = delete;

  // Queues `job`. Once stopped, runs it on the calling thread instead (the
  // worker is gone, and a FUSE request must still get its reply).
  void post(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopped_) {
        jobs_.push_back(std::move(job));
        cv_.notify_all();
        return;
      }
    }
    job();
  }

  // Queues `job` and returns true; once stopped, returns false and drops it
  // (for a job that goes on by itself where it was).
  bool post_if_running(Job job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return false;
    jobs_.push_back(std::move(job));
    cv_.notify_all();
    return true;
  }

  // Runs what is queued, then ends the thread. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopped, nothing left
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mu_;  // leaf: no job runs under it
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopped_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace resctrlfs::daemon

// sandbox_syscalls: system calls per second of the kinds the sandbox's
// seccomp supervisor sees, for bench/sandbox_seccomp.sh to compare inside
// resctrlfs-sandbox with --intercept none, statfs-only and all. Prints one
// `NAME OPS_PER_SECOND` line per operation: the best of ROUNDS timed
// batches of about SECONDS each (best, not mean: the machine is shared and
// only the cost of the calls themselves is wanted).
//
// usage: sandbox_syscalls [SECONDS [ROUNDS]]
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

volatile long sink;

double ops_per_second(const std::function<void()>& op, double seconds, int rounds) {
  using clock = std::chrono::steady_clock;
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    long n = 0;
    auto start = clock::now();
    auto deadline = start + std::chrono::duration<double>(seconds);
    auto now = start;
    while (now < deadline) {
      for (int i = 0; i < 64; ++i) op();
      n += 64;
      now = clock::now();
    }
    double rate = static_cast<double>(n) / std::chrono::duration<double>(now - start).count();
    if (rate > best) best = rate;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  // A regular file outside the mount: the common open the filter sees.
  const char* file = "/etc/hostname";
  struct Op {
    const char* name;
    std::function<void()> fn;
  };
  std::vector<Op> ops = {
      {"open_close",
       [&] {
         int fd = ::open(file, O_RDONLY | O_CLOEXEC);
         if (fd >= 0) ::close(fd);
         sink = fd;
       }},
      {"stat",
       [&] {
         struct stat st;
         sink = ::stat(file, &st);
       }},
      {"statfs_resctrl",
       [] {
         struct statfs s;
         sink = ::statfs("/sys/fs/resctrl", &s) == 0 ? s.f_type : -1;
       }},
      {"open_read_close_mountinfo",
       [] {
         char buf[65536];
         int fd = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
         if (fd < 0) return;
         while (::read(fd, buf, sizeof buf) > 0) {
         }
         ::close(fd);
       }},
  };
  for (const auto& op : ops)
    std::printf("%s %.0f\n", op.name, ops_per_second(op.fn, seconds, rounds));
  return 0;
}

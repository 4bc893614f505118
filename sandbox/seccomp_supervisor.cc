// Implements the seccomp user-notification supervisor of seccomp_supervisor.h.
#include "sandbox/seccomp_supervisor.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "sandbox/namespace.h"
#include "sandbox/path_resolve.h"
#include "sandbox/proc_rewrite.h"

namespace resctrlfs::sandbox {
namespace {

Error sys_error(const std::string& what) {
  int e = errno;
  return Error::make(e, what + ": " + std::strerror(e));
}

// Flags that make an open something other than a plain read of a file; such
// opens are never a mount table read and are not sent to the supervisor.
constexpr unsigned kNotPlainRead = O_ACCMODE | O_PATH | O_DIRECTORY | O_CREAT | O_TRUNC;

Result<void> add_rules(scmp_filter_ctx ctx, Intercept mode, bool virtual_cpus) {
  auto add = [&](int nr, unsigned count, const scmp_arg_cmp* cmp) -> Result<void> {
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, count, cmp);
    if (rc != 0) return Error::make(-rc, "seccomp_rule_add: " + std::string(std::strerror(-rc)));
    return {};
  };
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(statfs), 0, nullptr));
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(fstatfs), 0, nullptr));
  // Mounting and unmounting resctrl (rare calls: all of them are sent).
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(mount), 0, nullptr));
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(umount2), 0, nullptr));
  if (SCMP_SYS(umount) >= 0) RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(umount), 0, nullptr));
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(fsopen), 0, nullptr));
  if (virtual_cpus) {
    RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(sched_setaffinity), 0, nullptr));
    RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(sched_getaffinity), 0, nullptr));
    RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(getcpu), 0, nullptr));
  }
  if (mode != Intercept::kAll) return {};
  scmp_arg_cmp open_flags = SCMP_A1(SCMP_CMP_MASKED_EQ, kNotPlainRead, 0);
  scmp_arg_cmp openat_flags = SCMP_A2(SCMP_CMP_MASKED_EQ, kNotPlainRead, 0);
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(open), 1, &open_flags));
  RESCTRLFS_RETURN_IF_ERROR(add(SCMP_SYS(openat), 1, &openat_flags));
  // openat2's flags are behind a pointer: every call is sent.
  return add(SCMP_SYS(openat2), 0, nullptr);
}

// The filter as BPF, exported by libseccomp through a memfd.
Result<std::vector<sock_filter>> build_filter(Intercept mode, bool virtual_cpus) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return Error::make(ENOMEM, "seccomp_init failed");
  // Other architectures' calls (32-bit programs) pass untouched instead of
  // being killed; their statfs and opens are not intercepted.
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
  auto rules = add_rules(ctx, mode, virtual_cpus);
  if (!rules) {
    seccomp_release(ctx);
    return rules.error();
  }
  int mfd = ::memfd_create("seccomp-bpf", MFD_CLOEXEC);
  if (mfd < 0) {
    seccomp_release(ctx);
    return sys_error("memfd_create");
  }
  UniqueFd mem(mfd);
  int rc = seccomp_export_bpf(ctx, mem.get());
  seccomp_release(ctx);
  if (rc != 0) return Error::make(-rc, "seccomp_export_bpf: " + std::string(std::strerror(-rc)));
  off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0)
    return Error::make(EINVAL, "seccomp_export_bpf wrote no program");
  std::vector<sock_filter> prog(static_cast<size_t>(size) / sizeof(sock_filter));
  if (::pread(mem.get(), prog.data(), static_cast<size_t>(size), 0) != size)
    return sys_error("reading the BPF program");
  return prog;
}

// Reads a NUL-terminated string of at most PATH_MAX bytes from `pid`,
// never reading past a page it has not checked.
Result<std::string> read_string(pid_t pid, uint64_t addr) {
  constexpr size_t kPage = 4096;
  std::string out;
  char buf[kPage];
  while (out.size() < PATH_MAX) {
    size_t chunk = kPage - addr % kPage;
    iovec local{buf, chunk};
    iovec remote{reinterpret_cast<void*>(addr), chunk};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return Error::make(EFAULT);
    if (const void* z = std::memchr(buf, 0, static_cast<size_t>(n))) {
      out.append(buf, static_cast<const char*>(z) - buf);
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
    addr += static_cast<uint64_t>(n);
  }
  return Error::make(ENAMETOOLONG);
}

bool read_struct(pid_t pid, uint64_t addr, void* out, size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(addr), size};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

std::string_view basename_of(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The last number of a "Key:\tA\tB\tC" line of /proc/PID/status.
pid_t last_id(const std::string& status, const std::string& key) {
  size_t p = status.find("\n" + key + ":");
  if (p == std::string::npos) return 0;
  size_t nl = status.find('\n', p + 1);
  std::string line = status.substr(p + key.size() + 2, nl - p - key.size() - 2);
  size_t end = line.find_last_of("0123456789");
  if (end == std::string::npos) return 0;
  size_t begin = line.find_last_not_of("0123456789", end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  if (end - begin >= 9) return 0;
  return static_cast<pid_t>(std::strtol(line.substr(begin, end - begin + 1).c_str(), nullptr, 10));
}

Result<std::string> read_all(int dirfd, const char* name) {
  int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::make(errno);
  UniqueFd f(fd);
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::make(errno);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// A read-only fd of a sealed memfd holding `content`, at offset 0.
Result<UniqueFd> sealed_copy(const std::string& name, const std::string& content, int extra_flags) {
  int m = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (m < 0) return sys_error("memfd_create");
  UniqueFd mem(m);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n =
        ::pwrite(mem.get(), content.data() + off, content.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("writing the memfd");
    off += static_cast<size_t>(n);
  }
  if (::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0)
    return sys_error("sealing the memfd");
  std::string self = "/proc/self/fd/" + std::to_string(mem.get());
  int ro = ::open(self.c_str(), O_RDONLY | O_CLOEXEC | extra_flags);
  if (ro < 0) return sys_error("reopening the memfd read-only");
  return UniqueFd(ro);
}

}  // namespace

Result<Intercept> parse_intercept(std::string_view value) {
  if (value == "all") return Intercept::kAll;
  if (value == "statfs-only") return Intercept::kStatfsOnly;
  if (value == "none") return Intercept::kNone;
  return Error::make(
      EINVAL, "--intercept must be all, statfs-only or none, not '" + std::string(value) + "'");
}

struct statfs resctrl_statfs(dev_t device, long mount_flags) {
  struct statfs s;
  std::memset(&s, 0, sizeof s);
  s.f_type = kResctrlSuperMagic;
  s.f_bsize = ::sysconf(_SC_PAGESIZE);
  s.f_frsize = s.f_bsize;  // the VFS copies f_bsize when the filesystem leaves it 0
  s.f_namelen = 255;       // NAME_MAX
  // The fsid is the superblock's device number in the kernel's 64-bit
  // encoding, which is what stat(2) reports as st_dev.
  uint64_t id = static_cast<uint64_t>(device);
  std::memcpy(&s.f_fsid, &id, sizeof id);
  s.f_flags = mount_flags;
  return s;
}

Result<int> install_notify_filter(Intercept mode, bool virtual_cpus) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::vector<sock_filter> insns, build_filter(mode, virtual_cpus));
  sock_fprog prog{static_cast<unsigned short>(insns.size()), insns.data()};
  // Without no_new_privs (this is root with CAP_SYS_ADMIN): set-user-id
  // programs keep working inside the sandbox. WAIT_KILLABLE_RECV keeps a
  // caller's non-fatal signals (Go's preemption SIGURG) from restarting a
  // call the supervisor is already answering.
  unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
  long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (fd < 0 && errno == EINVAL) {
    flags &= ~static_cast<unsigned long>(SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
    fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  }
  if (fd < 0) return sys_error("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)");
  return static_cast<int>(fd);
}

Result<void> send_fd(int sock, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  while (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
    if (errno != EINTR) return sys_error("sending the seccomp listener");
  return {};
}

Result<int> receive_fd(int sock) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0)
    if (errno != EINTR) return sys_error("receiving the seccomp listener");
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (n != 1 || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
    return Error::make(EPROTO, "COMMAND did not send a seccomp listener");
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

namespace {

bool is_mount_call(int nr) {
  return nr == SYS_mount || nr == SYS_umount2 || nr == SYS_fsopen
#ifdef SYS_umount
         || nr == SYS_umount
#endif
      ;
}

}  // namespace

struct Supervisor::Impl : std::enable_shared_from_this<Supervisor::Impl> {
  UniqueFd listener;
  UniqueFd stop;  // eventfd: the loop ends when it is readable
  SupervisorConfig config;
  std::string device;  // MAJOR:MINOR as mountinfo shows it
  std::thread loop;
  // Slow answers go to a pool of workers, grown while none is idle (up to
  // kMaxWorkers) and kept: starting a thread per call would cost more than
  // the answer.
  static constexpr int kMaxWorkers = 32;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<seccomp_notif> queue;
  int idle = 0;
  int threads = 0;
  bool stopping = false;

  void run();
  void enqueue(const seccomp_notif& req);
  void work();
  void handle_fast(const seccomp_notif& req);
  void handle_slow(const seccomp_notif& req);
  bool still_valid(uint64_t id) const {
    uint64_t i = id;
    return ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &i) == 0;
  }
  void respond(uint64_t id, int64_t val, int error, bool cont) const {
    seccomp_notif_resp resp{};
    resp.id = id;
    resp.val = val;
    resp.error = error;
    resp.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
    // ENOENT: the caller is gone or was interrupted; nothing to answer.
    ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
  void carry_on(uint64_t id) const { respond(id, 0, 0, true); }

  // Each returns false when the call should simply continue.
  bool answer_statfs(const seccomp_notif& req);
  bool answer_open(const seccomp_notif& req);
  bool answer_mount(const seccomp_notif& req);
  bool answer_umount(const seccomp_notif& req);
  bool answer_fsopen(const seccomp_notif& req);
  bool answer_setaffinity(const seccomp_notif& req);
  bool answer_getaffinity(const seccomp_notif& req);
  bool answer_getcpu(const seccomp_notif& req);
  // Writes `size` bytes to the caller's memory at `addr` and answers `val`
  // (EFAULT when the memory cannot be written); true once answered.
  bool write_and_answer(const seccomp_notif& req, uint64_t addr, const void* data, size_t size,
                        int64_t val);
  // The thread a sched_*affinity call names (0: the caller), or 0 when the
  // kernel should answer (a caller in another pid namespace naming a thread).
  pid_t affinity_target(const seccomp_notif& req) const;

  std::mutex vcpu_mu;  // guards vcpu_table
  VcpuTable vcpu_table;

  // The resctrlfs mounts to show as resctrl now.
  std::vector<ResctrlMount> resctrl_mounts() const {
    if (config.mounts) return config.mounts->mounts();
    ResctrlMount m;
    m.device = config.device;
    m.options = config.resctrl_opts;
    return {m};
  }
};

void Supervisor::Impl::run() {
  pollfd fds[2] = {{listener.get(), POLLIN, 0}, {stop.get(), POLLIN, 0}};
  while (true) {
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (fds[0].revents & POLLIN) {
      seccomp_notif req;
      std::memset(&req, 0, sizeof req);
      if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
      handle_fast(req);
    } else if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      // Every process under the filter has exited; none can join.
      return;
    }
  }
}

void Supervisor::Impl::handle_fast(const seccomp_notif& req) {
  const int nr = req.data.nr;
  if (nr == SYS_open || nr == SYS_openat) {
    // Most opens are not of a mount table: the name decides it cheaply.
    uint64_t path_arg = nr == SYS_open ? req.data.args[0] : req.data.args[1];
    auto path = read_string(static_cast<pid_t>(req.pid), path_arg);
    if (!still_valid(req.id)) return;
    std::string_view base = path ? basename_of(*path) : std::string_view();
    if (base != "mounts" && base != "mountinfo") {
      carry_on(req.id);
      return;
    }
  } else if (nr != SYS_openat2 && nr != SYS_statfs && nr != SYS_fstatfs && !is_mount_call(nr) &&
             nr != SYS_sched_setaffinity && nr != SYS_sched_getaffinity && nr != SYS_getcpu) {
    carry_on(req.id);
    return;
  }
  // A lookup may block in a FUSE server (this mount's or another's): off the
  // loop.
  enqueue(req);
}

void Supervisor::Impl::enqueue(const seccomp_notif& req) {
  std::unique_lock<std::mutex> lock(mu);
  queue.push_back(req);
  if (idle == 0 && threads < kMaxWorkers) {
    try {
      std::thread([self = shared_from_this()] { self->work(); }).detach();
      ++threads;
    } catch (const std::system_error&) {
      if (threads == 0) {
        // No worker at all: answer here rather than never.
        queue.pop_back();
        lock.unlock();
        handle_slow(req);
        return;
      }
    }
  }
  cv.notify_one();
}

void Supervisor::Impl::work() {
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    while (queue.empty() && !stopping) {
      ++idle;
      cv.wait(lock);
      --idle;
    }
    if (stopping) {
      --threads;
      return;
    }
    seccomp_notif req = queue.front();
    queue.pop_front();
    lock.unlock();
    handle_slow(req);
    lock.lock();
  }
}

void Supervisor::Impl::handle_slow(const seccomp_notif& req) {
  bool answered = false;
  const int nr = req.data.nr;
  if (nr == SYS_statfs || nr == SYS_fstatfs)
    answered = answer_statfs(req);
  else if (nr == SYS_mount)
    answered = answer_mount(req);
  else if (is_mount_call(nr) && nr != SYS_fsopen)
    answered = answer_umount(req);
  else if (nr == SYS_fsopen)
    answered = answer_fsopen(req);
  else if (nr == SYS_sched_setaffinity)
    answered = answer_setaffinity(req);
  else if (nr == SYS_sched_getaffinity)
    answered = answer_getaffinity(req);
  else if (nr == SYS_getcpu)
    answered = answer_getcpu(req);
  else
    answered = answer_open(req);
  if (!answered) carry_on(req.id);
}

namespace {

// The fds and ids a lookup for thread `tid` needs, opened while its
// notification is pending (and so while `tid` is that caller).
struct Caller {
  std::string proc;  // /proc/TID
  UniqueFd root;
  ProcessView view;
};

Result<Caller> open_caller(pid_t tid) {
  Caller c;
  c.proc = "/proc/" + std::to_string(tid);
  int r = ::open((c.proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (r < 0) return Error::make(errno);
  c.root.reset(r);
  RESCTRLFS_ASSIGN_OR_RETURN(std::string status, read_text_file(c.proc + "/status"));
  c.view.root_fd = c.root.get();
  c.view.tgid = last_id(status, "NStgid");
  c.view.tid = last_id(status, "NSpid");
  if (c.view.tgid <= 0 || c.view.tid <= 0) return Error::make(ESRCH);
  return c;
}

// The directory a relative path starts from: the cwd or a directory fd.
Result<UniqueFd> open_start(const Caller& c, int dirfd) {
  std::string p = dirfd == AT_FDCWD ? c.proc + "/cwd" : c.proc + "/fd/" + std::to_string(dirfd);
  if (dirfd != AT_FDCWD && dirfd < 0) return Error::make(EBADF);
  int fd = ::open(p.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return Error::make(errno);
  return UniqueFd(fd);
}

}  // namespace

bool Supervisor::Impl::answer_statfs(const seccomp_notif& req) {
  const pid_t tid = static_cast<pid_t>(req.pid);
  auto caller = open_caller(tid);
  if (!caller) return false;
  UniqueFd target;
  if (req.data.nr == SYS_fstatfs) {
    int fd = static_cast<int>(req.data.args[0]);
    if (fd < 0) return false;
    std::string p = caller->proc + "/fd/" + std::to_string(fd);
    int t = ::open(p.c_str(), O_PATH | O_CLOEXEC);
    if (t < 0) return false;
    target.reset(t);
    if (!still_valid(req.id)) return true;  // the fd may be another process's
  } else {
    auto path = read_string(tid, req.data.args[0]);
    auto start = open_start(*caller, AT_FDCWD);
    if (!still_valid(req.id)) return true;
    if (!path || !start) return false;
    auto r = resolve_in_view(caller->view, start->get(), *path, ResolveOptions{});
    if (!r) return false;
    target = std::move(r->fd);
  }
  struct stat st;
  struct statfs real;
  if (::fstat(target.get(), &st) != 0) return false;
  bool ours = false;
  for (const auto& m : resctrl_mounts()) ours = ours || m.device == st.st_dev;
  if (!ours) return false;
  if (::fstatfs(target.get(), &real) != 0) return false;
  struct statfs fake = resctrl_statfs(st.st_dev, real.f_flags);
  // /proc/TID/mem is bound to the caller's memory once opened; the id check
  // after it makes sure that memory is still the caller's.
  int mem = ::open((caller->proc + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (mem < 0) return false;
  UniqueFd memfd(mem);
  if (!still_valid(req.id)) return true;
  ssize_t n = ::pwrite(memfd.get(), &fake, sizeof fake, static_cast<off_t>(req.data.args[1]));
  if (n != static_cast<ssize_t>(sizeof fake))
    respond(req.id, 0, -EFAULT, false);
  else
    respond(req.id, 0, 0, false);
  return true;
}

bool Supervisor::Impl::answer_open(const seccomp_notif& req) {
  const pid_t tid = static_cast<pid_t>(req.pid);
  const int nr = req.data.nr;
  int dirfd = nr == SYS_open ? AT_FDCWD : static_cast<int>(req.data.args[0]);
  uint64_t path_arg = nr == SYS_open ? req.data.args[0] : req.data.args[1];
  uint64_t flags = nr == SYS_open ? req.data.args[1] : req.data.args[2];
  ResolveOptions ro;
  if (nr == SYS_openat2) {
    open_how how{};
    size_t size = req.data.args[3];
    if (size < sizeof how) return false;
    if (!read_struct(tid, req.data.args[2], &how, sizeof how)) return false;
    flags = how.flags;
    if (how.resolve & (RESOLVE_NO_XDEV | RESOLVE_CACHED)) return false;
    ro.no_symlinks = how.resolve & RESOLVE_NO_SYMLINKS;
    ro.no_magiclinks = how.resolve & RESOLVE_NO_MAGICLINKS;
    ro.root_is_start = how.resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH);
  }
  if ((flags & kNotPlainRead) != 0) return false;
  ro.follow_last = !(flags & O_NOFOLLOW);
  auto path = read_string(tid, path_arg);
  if (!path || path->empty() || path->back() == '/') return false;
  std::string_view base = basename_of(*path);
  if (base != "mounts" && base != "mountinfo") return false;  // openat2 comes here unsorted
  auto caller = open_caller(tid);
  if (!caller) return false;
  auto start = open_start(*caller, dirfd);
  if (!still_valid(req.id)) return true;
  if (!start) return false;
  auto r = resolve_in_view(caller->view, start->get(), *path, ro);
  if (!r || (r->name != "mounts" && r->name != "mountinfo")) return false;
  struct stat st;
  struct statfs sf;
  if (::fstat(r->fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (::fstatfs(r->parent_fd.get(), &sf) != 0 || sf.f_type != kProcSuperMagic) return false;
  auto mountinfo = read_all(r->parent_fd.get(), "mountinfo");
  if (!mountinfo) return false;
  std::vector<ResctrlDevice> devices;
  for (const auto& m : resctrl_mounts())
    devices.push_back(
        {std::to_string(major(m.device)) + ":" + std::to_string(minor(m.device)), m.options});
  MountTableRewrite mi = rewrite_mountinfo_of_devices(*mountinfo, devices);
  if (mi.lines.empty()) return false;  // that process does not see the mount
  std::string content = std::move(mi.text);
  if (r->name == "mounts") {
    auto mounts = read_all(r->parent_fd.get(), "mounts");
    if (!mounts) return false;
    content = rewrite_mounts_like(*mounts, mi);
  }
  auto copy = sealed_copy(r->name, content, static_cast<int>(flags & O_NONBLOCK));
  if (!copy) return false;
  if (!still_valid(req.id)) return true;
  seccomp_notif_addfd add{};
  add.id = req.id;
  add.flags = SECCOMP_ADDFD_FLAG_SEND;
  add.srcfd = static_cast<uint32_t>(copy->get());
  add.newfd_flags = static_cast<uint32_t>(flags & O_CLOEXEC);
  if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0) return true;
  if (errno != EINVAL) return true;  // ENOENT: gone; anything else: it gets no answer
  // Kernels before 5.14: add the fd, then answer with its number.
  add.flags = 0;
  int newfd = ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  if (newfd < 0) return false;
  respond(req.id, newfd, 0, false);
  return true;
}

namespace {

// Whether thread `tid` is in this process's mount namespace (mounts the
// sandbox makes happen there: another namespace, a container's, cannot see
// them).
bool in_my_mount_namespace(pid_t tid) {
  struct stat mine, theirs;
  std::string p = "/proc/" + std::to_string(tid) + "/ns/mnt";
  return ::stat("/proc/self/ns/mnt", &mine) == 0 && ::stat(p.c_str(), &theirs) == 0 &&
         mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

// Whether thread `tid` has CAP_SYS_ADMIN in its effective set (what mount
// and umount need; the sandbox's namespace belongs to its user namespace).
bool has_cap_sys_admin(const std::string& proc) {
  auto status = read_text_file(proc + "/status");
  if (!status) return false;
  size_t p = status->find("\nCapEff:");
  if (p == std::string::npos) return false;
  uint64_t caps = std::strtoull(status->c_str() + p + 8, nullptr, 16);
  return (caps >> 21) & 1;  // CAP_SYS_ADMIN
}

// The path of an O_PATH fd as this process sees it.
std::string path_of(int fd) {
  char buf[PATH_MAX + 1];
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

bool Supervisor::Impl::answer_mount(const seccomp_notif& req) {
  if (!config.mounts) return false;
  const pid_t tid = static_cast<pid_t>(req.pid);
  const uint64_t flags = req.data.args[3];
  // A remount, bind, move or propagation change ignores the type: the
  // kernel's business (for a resctrlfs mount it changes the FUSE mount).
  constexpr uint64_t kNotNew =
      MS_REMOUNT | MS_BIND | MS_MOVE | MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
  if (flags & kNotNew) return false;
  if (req.data.args[2] == 0) return false;
  auto type = read_string(tid, req.data.args[2]);
  if (!type || *type != "resctrl") return false;
  if (!in_my_mount_namespace(tid)) return false;  // the kernel: ENODEV
  auto target = read_string(tid, req.data.args[1]);
  std::string data;
  if (req.data.args[4] != 0) {
    // The kernel copies at most a page of options.
    auto d = read_string(tid, req.data.args[4]);
    if (!d) {
      respond(req.id, 0, -EFAULT, false);
      return true;
    }
    data = *d;
  }
  const bool has_source = req.data.args[0] != 0;
  auto caller = open_caller(tid);
  if (!caller) return false;
  auto start = open_start(*caller, AT_FDCWD);
  if (!still_valid(req.id)) return true;
  if (!target) {
    respond(req.id, 0, -target.error().code, false);
    return true;
  }
  if (!start) return false;
  // In the kernel's order: the mount point's lookup, the permission, the
  // options, then whether resctrl is mounted already.
  auto r = resolve_in_view(caller->view, start->get(), *target, ResolveOptions{});
  if (!r) {
    respond(req.id, 0, -r.error().code, false);
    return true;
  }
  struct stat st;
  if (::fstat(r->fd.get(), &st) != 0) return false;
  const std::string where = path_of(r->fd.get());
  r->fd.reset();
  r->parent_fd.reset();
  if (!has_cap_sys_admin(caller->proc)) {
    respond(req.id, 0, -EPERM, false);
    return true;
  }
  ResctrlMountData parsed = parse_resctrl_mount_data(data, has_source);
  if (parsed.error) {
    // mount(2) has no fs_context to log to: the kernel prints the message.
    if (!parsed.message.empty()) std::fprintf(stderr, "%s\n", parsed.message.c_str());
    respond(req.id, 0, -parsed.error, false);
    return true;
  }
  if (where.empty() || where[0] != '/') return false;
  if (!config.mounts->mounts().empty()) {
    respond(req.id, 0, -EBUSY, false);
    return true;
  }
  if (!S_ISDIR(st.st_mode)) {
    respond(req.id, 0, -ENOTDIR, false);
    return true;
  }
  if (!still_valid(req.id)) return true;
  auto m = config.mounts->mount(where, parsed.options);
  respond(req.id, 0, m ? 0 : -m.error().code, false);
  return true;
}

bool Supervisor::Impl::answer_umount(const seccomp_notif& req) {
  if (!config.mounts) return false;
  const pid_t tid = static_cast<pid_t>(req.pid);
  const int flags = req.data.nr == SYS_umount2 ? static_cast<int>(req.data.args[1]) : 0;
  // An expiry mark is the kernel's business (a second one unmounts the FUSE
  // mount, and the daemon ends).
  if (flags & MNT_EXPIRE) return false;
  if (!in_my_mount_namespace(tid)) return false;
  auto path = read_string(tid, req.data.args[0]);
  auto caller = open_caller(tid);
  if (!caller) return false;
  auto start = open_start(*caller, AT_FDCWD);
  if (!still_valid(req.id)) return true;
  if (!path || !start) return false;
  ResolveOptions ro;
  ro.follow_last = !(flags & UMOUNT_NOFOLLOW);
  auto r = resolve_in_view(caller->view, start->get(), *path, ro);
  if (!r) return false;
  struct statx stx;
  if (::statx(r->fd.get(), "", AT_EMPTY_PATH | AT_NO_AUTOMOUNT, STATX_INO | STATX_MNT_ID, &stx) !=
          0 ||
      !(stx.stx_mask & STATX_MNT_ID))
    return false;
  r->fd.reset();  // held, it would make the mount busy
  r->parent_fd.reset();
  bool ours = false;
  for (const auto& m : config.mounts->mounts())
    ours = ours || (m.mnt_id == stx.stx_mnt_id && m.root_ino == stx.stx_ino);
  if (!ours) return false;  // not the root of one of the sandbox's mounts
  if (!has_cap_sys_admin(caller->proc)) {
    respond(req.id, 0, -EPERM, false);
    return true;
  }
  if (!still_valid(req.id)) return true;
  auto u = config.mounts->unmount(stx.stx_mnt_id, flags);
  respond(req.id, 0, u ? 0 : -u.error().code, false);
  return true;
}

bool Supervisor::Impl::answer_fsopen(const seccomp_notif& req) {
  if (!config.mounts) return false;
  auto name = read_string(static_cast<pid_t>(req.pid), req.data.args[0]);
  if (!still_valid(req.id)) return true;
  if (!name || *name != "resctrl") return false;
  // The new mount API (fsopen, fsconfig, fsmount, move_mount) is not
  // emulated: resctrl is refused as by a kernel without it, and tools fall
  // back to mount(2) or report it.
  respond(req.id, 0, -ENODEV, false);
  return true;
}

namespace {

bool thread_facts(pid_t tid, ThreadFacts* out) { return read_thread_facts("/proc", tid, out); }

bool same_pid_namespace(pid_t tid) {
  struct stat mine, theirs;
  std::string p = "/proc/" + std::to_string(tid) + "/ns/pid";
  return ::stat("/proc/self/ns/pid", &mine) == 0 && ::stat(p.c_str(), &theirs) == 0 &&
         mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

// The uid/euid of thread `tid` and whether it has CAP_SYS_NICE.
struct Creds {
  long uid = -1, euid = -1;
  bool sys_nice = false;
};
bool read_creds(pid_t tid, Creds* out) {
  auto status = read_text_file("/proc/" + std::to_string(tid) + "/status");
  if (!status) return false;
  size_t p = status->find("\nUid:");
  size_t c = status->find("\nCapEff:");
  if (p == std::string::npos || c == std::string::npos) return false;
  char* end = nullptr;
  out->uid = std::strtol(status->c_str() + p + 5, &end, 10);
  out->euid = std::strtol(end, nullptr, 10);
  out->sys_nice = (std::strtoull(status->c_str() + c + 8, nullptr, 16) >> 23) & 1;  // CAP_SYS_NICE
  return true;
}

// The bytes of a mask's words, little-endian as the kernel's cpumask.
std::vector<uint8_t> mask_bytes(const CpuMask& m, size_t size) {
  std::vector<uint8_t> out(size, 0);
  const auto& w = m.words();
  for (size_t i = 0; i < size && i / 8 < w.size(); ++i)
    out[i] = static_cast<uint8_t>(w[i / 8] >> (8 * (i % 8)));
  return out;
}

}  // namespace

pid_t Supervisor::Impl::affinity_target(const seccomp_notif& req) const {
  const pid_t caller = static_cast<pid_t>(req.pid);
  const pid_t pid = static_cast<pid_t>(req.data.args[0]);
  if (pid == 0) return caller;
  if (pid < 0) return -1;
  return same_pid_namespace(caller) ? pid : 0;
}

bool Supervisor::Impl::write_and_answer(const seccomp_notif& req, uint64_t addr, const void* data,
                                        size_t size, int64_t val) {
  const std::string mem_path = "/proc/" + std::to_string(req.pid) + "/mem";
  int mem = ::open(mem_path.c_str(), O_RDWR | O_CLOEXEC);
  if (mem < 0) return false;
  UniqueFd memfd(mem);
  if (!still_valid(req.id)) return true;
  ssize_t n = ::pwrite(memfd.get(), data, size, static_cast<off_t>(addr));
  if (n != static_cast<ssize_t>(size))
    respond(req.id, 0, -EFAULT, false);
  else
    respond(req.id, val, 0, false);
  return true;
}

bool Supervisor::Impl::answer_setaffinity(const seccomp_notif& req) {
  const VcpuMap& map = config.vcpus;
  if (!map.enabled()) return false;
  const pid_t caller = static_cast<pid_t>(req.pid);
  const pid_t target = affinity_target(req);
  if (target == 0) return false;
  if (target < 0) {
    respond(req.id, 0, -ESRCH, false);
    return true;
  }
  // The kernel reads at most its mask's size and treats the rest as zero.
  const unsigned nr = map.virtual_cpus();
  const size_t want = std::min<uint64_t>(req.data.args[1], (nr + 63) / 64 * 8);
  std::vector<uint8_t> bytes(want);
  if (want > 0 && !read_struct(caller, req.data.args[2], bytes.data(), want)) {
    if (!still_valid(req.id)) return true;
    respond(req.id, 0, -EFAULT, false);
    return true;
  }
  CpuMask v(nr);
  for (unsigned c = 0; c < nr && c / 8 < want; ++c)
    if ((bytes[c / 8] >> (c % 8)) & 1) v.set(c);
  ThreadFacts tf, cf;
  Creds tc, cc;
  const bool found = thread_facts(target, &tf) && read_creds(target, &tc);
  const bool caller_ok = thread_facts(caller, &cf) && read_creds(caller, &cc);
  if (!still_valid(req.id)) return true;
  if (!found) {
    respond(req.id, 0, -ESRCH, false);
    return true;
  }
  if (!caller_ok) return false;
  // The kernel's check_same_owner, or CAP_SYS_NICE.
  if (tf.tgid != cf.tgid && !cc.sys_nice && cc.euid != tc.uid && cc.euid != tc.euid) {
    respond(req.id, 0, -EPERM, false);
    return true;
  }
  if (v.empty()) {  // no CPU of the machine in the mask
    respond(req.id, 0, -EINVAL, false);
    return true;
  }
  const CpuMask host = map.to_host(v);
  const size_t host_size = CPU_ALLOC_SIZE(map.host_bits());
  cpu_set_t* set = CPU_ALLOC(map.host_bits());
  if (!set) return false;
  CPU_ZERO_S(host_size, set);
  for (unsigned c : host.cpus()) CPU_SET_S(c, host_size, set);
  std::lock_guard<std::mutex> lock(vcpu_mu);
  int rc = ::sched_setaffinity(target, host_size, set);
  int err = errno;
  CPU_FREE(set);
  if (rc != 0) {
    respond(req.id, 0, -err, false);
    return true;
  }
  if (vcpu_table.map().virtual_cpus() == 0) vcpu_table = VcpuTable(map);
  vcpu_table.set(target, tf.tgid, tf.start, v);
  if (vcpu_table.records().size() > 256) vcpu_table.prune(thread_facts);
  if (!config.vcpu_file.empty()) {
    // Replaced whole, so that a daemon never reads half of it.
    const std::string tmp = config.vcpu_file + ".new";
    if (write_text_file(tmp, format_vcpu_table(vcpu_table)))
      ::rename(tmp.c_str(), config.vcpu_file.c_str());
  }
  respond(req.id, 0, 0, false);
  return true;
}

bool Supervisor::Impl::answer_getaffinity(const seccomp_notif& req) {
  const VcpuMap& map = config.vcpus;
  if (!map.enabled()) return false;
  const pid_t target = affinity_target(req);
  if (target == 0) return false;
  const unsigned nr = map.virtual_cpus();
  const uint64_t len = req.data.args[1];
  const size_t size = (nr + 63) / 64 * 8;  // the kernel's cpumask_size()
  if (len * 8 < nr || (len & (sizeof(long) - 1)) != 0) {
    respond(req.id, 0, -EINVAL, false);
    return true;
  }
  ThreadFacts tf;
  if (target < 0 || !thread_facts(target, &tf)) {
    if (!still_valid(req.id)) return true;
    respond(req.id, 0, -ESRCH, false);
    return true;
  }
  CpuMask v(nr);
  {
    std::lock_guard<std::mutex> lock(vcpu_mu);
    const VcpuTable empty(map);
    const VcpuTable& t = vcpu_table.map().virtual_cpus() ? vcpu_table : empty;
    v = t.affinity(target, tf, thread_facts);
  }
  const size_t ret = std::min<uint64_t>(len, size);
  auto bytes = mask_bytes(v, ret);
  return write_and_answer(req, req.data.args[2], bytes.data(), ret, static_cast<int64_t>(ret));
}

bool Supervisor::Impl::answer_getcpu(const seccomp_notif& req) {
  const VcpuMap& map = config.vcpus;
  if (!map.enabled()) return false;
  const pid_t tid = static_cast<pid_t>(req.pid);
  ThreadFacts tf;
  if (!thread_facts(tid, &tf) || tf.host_cpu < 0) return false;
  unsigned cpu;
  {
    std::lock_guard<std::mutex> lock(vcpu_mu);
    const VcpuTable empty(map);
    const VcpuTable& t = vcpu_table.map().virtual_cpus() ? vcpu_table : empty;
    cpu = map.running_on(t.affinity(tid, tf, thread_facts), static_cast<unsigned>(tf.host_cpu));
  }
  unsigned node =
      cpu < config.vcpu_nodes.size() ? static_cast<unsigned>(config.vcpu_nodes[cpu]) : 0;
  // Each pointer may be NULL.
  if (req.data.args[1] != 0) {
    const std::string mem_path = "/proc/" + std::to_string(req.pid) + "/mem";
    int mem = ::open(mem_path.c_str(), O_RDWR | O_CLOEXEC);
    if (mem < 0) return false;
    UniqueFd memfd(mem);
    if (!still_valid(req.id)) return true;
    if (::pwrite(memfd.get(), &node, sizeof node, static_cast<off_t>(req.data.args[1])) !=
        static_cast<ssize_t>(sizeof node)) {
      respond(req.id, 0, -EFAULT, false);
      return true;
    }
  }
  if (req.data.args[0] != 0) return write_and_answer(req, req.data.args[0], &cpu, sizeof cpu, 0);
  if (!still_valid(req.id)) return true;
  respond(req.id, 0, 0, false);
  return true;
}

Supervisor::Supervisor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Supervisor::~Supervisor() {
  uint64_t one = 1;
  if (::write(impl_->stop.get(), &one, sizeof one) < 0) {
    // The eventfd cannot be full after one write; nothing else to do.
  }
  if (impl_->loop.joinable()) impl_->loop.join();
  // Idle workers leave now; one still answering (blocked in some lookup)
  // leaves when done, and the last one out closes the listener.
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopping = true;
  impl_->cv.notify_all();
}

Result<std::unique_ptr<Supervisor>> Supervisor::start(int listener, SupervisorConfig config) {
  auto impl = std::make_shared<Impl>();
  impl->listener.reset(listener);
  int ev = ::eventfd(0, EFD_CLOEXEC);
  if (ev < 0) return sys_error("eventfd");
  impl->stop.reset(ev);
  impl->device = std::to_string(major(config.device)) + ":" + std::to_string(minor(config.device));
  impl->config = std::move(config);
  Impl* raw = impl.get();
  try {
    raw->loop = std::thread([raw] { raw->run(); });
  } catch (const std::system_error& e) {
    return Error::make(EAGAIN, std::string("starting the supervisor thread: ") + e.what());
  }
  return std::unique_ptr<Supervisor>(new Supervisor(std::move(impl)));
}

}  // namespace resctrlfs::sandbox

// Implements ForkTracepoint: locating tracefs, parsing the tracepoint's
// format, opening the per-CPU perf events and reading their ring buffers.
#include "daemon/fork_tracepoint.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "base/cpulist.h"
#include "daemon/startup.h"

namespace resctrlfs::daemon {

namespace {

constexpr const char* kEventDir = "events/sched/sched_process_fork";

// A list that names a CPU number this high is not a machine's CPU list (the
// kernel's NR_CPUS is at most 8192).
constexpr unsigned kMaxListedCpus = 65536;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The value of "key:N;" inside one field line of a format file.
bool field_number(std::string_view line, std::string_view key, uint32_t* out) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + key.size());
  const size_t end = rest.find(';');
  if (end == std::string_view::npos) return false;
  rest = trim(rest.substr(0, end));
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), *out);
  return ec == std::errc() && p == rest.data() + rest.size();
}

// The name declared by "field:TYPE NAME;", "field:TYPE NAME[N];" or
// "field:__data_loc TYPE[] NAME;".
std::string_view field_name(std::string_view line) {
  const size_t at = line.find("field:");
  if (at == std::string_view::npos) return {};
  std::string_view decl = line.substr(at + 6);
  const size_t end = decl.find(';');
  if (end == std::string_view::npos) return {};
  decl = trim(decl.substr(0, end));
  if (!decl.empty() && decl.back() == ']') {
    const size_t bracket = decl.rfind('[');
    if (bracket != std::string_view::npos) decl = trim(decl.substr(0, bracket));
  }
  const size_t space = decl.find_last_of(" \t*");
  return space == std::string_view::npos ? decl : decl.substr(space + 1);
}

int64_t read_int(const unsigned char* p, uint32_t size) {
  if (size == 8) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Octal escapes (\040 for a space) in a /proc/self/mounts field.
std::string unescape_mount_field(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out += static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// The mount point of a tracefs already mounted (taken from /proc/self/mounts
// so that looking never triggers debugfs's automount of tracing).
std::string tracefs_mountpoint() {
  const std::string mounts = read_text_file("/proc/self/mounts");
  size_t pos = 0;
  while (pos < mounts.size()) {
    size_t nl = mounts.find('\n', pos);
    if (nl == std::string::npos) nl = mounts.size();
    std::string_view line(mounts.data() + pos, nl - pos);
    pos = nl + 1;
    const size_t s1 = line.find(' ');
    if (s1 == std::string_view::npos) continue;
    const size_t s2 = line.find(' ', s1 + 1);
    if (s2 == std::string_view::npos) continue;
    const size_t s3 = line.find(' ', s2 + 1);
    if (s3 == std::string_view::npos) continue;
    if (line.substr(s2 + 1, s3 - s2 - 1) == "tracefs") {
      return unescape_mount_field(line.substr(s1 + 1, s2 - s1 - 1));
    }
  }
  return {};
}

struct TraceInfo {
  uint64_t id = 0;
  ForkTraceFormat fmt;
};

Result<TraceInfo> read_trace_info_in(const std::string& dir) {
  const std::string base = dir + "/" + kEventDir;
  const std::string id_text = read_text_file(base + "/id");
  TraceInfo info;
  std::string_view id_sv = trim(id_text);
  while (!id_sv.empty() && id_sv.back() == '\n') id_sv.remove_suffix(1);
  auto [p, ec] = std::from_chars(id_sv.data(), id_sv.data() + id_sv.size(), info.id);
  if (id_sv.empty() || ec != std::errc() || p != id_sv.data() + id_sv.size()) {
    return Error::make(ENOENT, "no readable " + base + "/id");
  }
  RESCTRLFS_ASSIGN_OR_RETURN(info.fmt, parse_fork_format(read_text_file(base + "/format")));
  return info;
}

// A private mount of tracefs, gone again when this returns: the daemon must
// not leave a mount behind on the host.
Result<TraceInfo> read_trace_info_private_mount() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/resctrlfsd-tracefs.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return Error::make(errno, "mkdtemp " + tmpl + ": " + strerror(errno));
  }
  Result<TraceInfo> info = Error::make(EIO, "");
  if (mount("nodev", tmpl.c_str(), "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    info = Error::make(errno, std::string("mount tracefs: ") + strerror(errno));
  } else {
    info = read_trace_info_in(tmpl);
    if (umount2(tmpl.c_str(), 0) != 0) (void)umount2(tmpl.c_str(), MNT_DETACH);
  }
  (void)rmdir(tmpl.c_str());
  return info;
}

Result<TraceInfo> read_trace_info() {
  const std::string mounted = tracefs_mountpoint();
  if (!mounted.empty()) {
    Result<TraceInfo> info = read_trace_info_in(mounted);
    if (info.ok()) return info;
  }
  return read_trace_info_private_mount();
}

}  // namespace

std::vector<unsigned> parse_cpu_list(std::string_view s) {
  Result<CpuMask> m = resctrlfs::parse_cpu_list(s, kMaxListedCpus, CpuListSyntax::kPrinted);
  return m.ok() ? m->cpus() : std::vector<unsigned>{};
}

Result<ForkTraceFormat> parse_fork_format(std::string_view text) {
  ForkTraceFormat fmt;
  bool parent = false, child = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string_view name = field_name(line);
    if (name != "parent_pid" && name != "child_pid") continue;
    uint32_t offset = 0, size = 0;
    if (!field_number(line, "offset:", &offset) || !field_number(line, "size:", &size) ||
        (size != 4 && size != 8)) {
      return Error::make(EINVAL, "sched_process_fork format: bad field line: " + std::string(line));
    }
    if (name == "parent_pid") {
      fmt.parent_pid_offset = offset;
      fmt.parent_pid_size = size;
      parent = true;
    } else {
      fmt.child_pid_offset = offset;
      fmt.child_pid_size = size;
      child = true;
    }
  }
  if (!parent || !child) {
    return Error::make(EINVAL, "sched_process_fork format: no parent_pid/child_pid fields");
  }
  return fmt;
}

bool parse_fork_raw(const ForkTraceFormat& fmt, const void* data, size_t len, pid_t* parent_tid,
                    pid_t* child_tid) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (fmt.parent_pid_size == 0 || fmt.child_pid_size == 0) return false;
  if (size_t{fmt.parent_pid_offset} + fmt.parent_pid_size > len ||
      size_t{fmt.child_pid_offset} + fmt.child_pid_size > len) {
    return false;
  }
  *parent_tid = static_cast<pid_t>(read_int(p + fmt.parent_pid_offset, fmt.parent_pid_size));
  *child_tid = static_cast<pid_t>(read_int(p + fmt.child_pid_offset, fmt.child_pid_size));
  return true;
}

PerfForkRecord parse_perf_record(const ForkTraceFormat& fmt, const void* rec, size_t len) {
  PerfForkRecord out;
  const auto* p = static_cast<const unsigned char*>(rec);
  perf_event_header hdr;
  if (len < sizeof(hdr)) return out;
  std::memcpy(&hdr, p, sizeof(hdr));
  if (hdr.size > len || hdr.size < sizeof(hdr)) return out;
  len = hdr.size;
  if (hdr.type == PERF_RECORD_LOST) {
    // u64 id, u64 lost
    if (len < sizeof(hdr) + 16) return out;
    out.kind = PerfForkRecord::Kind::kLost;
    std::memcpy(&out.lost, p + sizeof(hdr) + 8, 8);
    return out;
  }
  if (hdr.type != PERF_RECORD_SAMPLE) return out;
  // PERF_SAMPLE_TIME then PERF_SAMPLE_RAW: u64 time, u32 size, raw bytes.
  size_t at = sizeof(hdr);
  if (len < at + 8 + 4) return out;
  uint64_t time = 0;
  std::memcpy(&time, p + at, 8);
  at += 8;
  uint32_t raw_size = 0;
  std::memcpy(&raw_size, p + at, 4);
  at += 4;
  if (raw_size > len - at) return out;
  pid_t parent = 0, child = 0;
  if (!parse_fork_raw(fmt, p + at, raw_size, &parent, &child)) return out;
  out.kind = PerfForkRecord::Kind::kFork;
  out.event = ProcEvent{ProcEvent::Kind::kFork, parent, child, time};
  return out;
}

uint64_t walk_perf_ring(const char* data, uint64_t size, uint64_t tail, uint64_t head,
                        const std::function<void(const char*, size_t)>& on_record) {
  std::vector<char> scratch;
  while (head - tail >= sizeof(perf_event_header)) {
    const uint64_t off = tail % size;
    perf_event_header hdr;
    // The header itself may straddle the end of the area.
    for (size_t i = 0; i < sizeof(hdr); ++i) {
      reinterpret_cast<char*>(&hdr)[i] = data[(off + i) % size];
    }
    if (hdr.size < sizeof(hdr) || hdr.size > head - tail || hdr.size > size) return head;
    if (off + hdr.size <= size) {
      on_record(data + off, hdr.size);
    } else {
      const uint64_t first = size - off;
      scratch.assign(data + off, data + size);
      scratch.insert(scratch.end(), data, data + (hdr.size - first));
      on_record(scratch.data(), scratch.size());
    }
    tail += hdr.size;
  }
  return head;
}

std::vector<ProcEvent> merge_task_events(const std::vector<ProcEvent>& traced,
                                         const std::vector<ProcEvent>& connector) {
  std::unordered_set<pid_t> traced_children;
  for (const ProcEvent& e : traced) traced_children.insert(e.tid);
  std::vector<ProcEvent> out = traced;
  // The tracepoint's fork records do not carry the child's process; the
  // connector's report of the same fork does.
  std::unordered_map<pid_t, pid_t> tgid_of;
  for (const ProcEvent& e : connector) {
    if (e.kind == ProcEvent::Kind::kFork && traced_children.count(e.tid) != 0) {
      tgid_of[e.tid] = e.tgid;
      continue;
    }
    out.push_back(e);
  }
  if (!tgid_of.empty()) {
    for (ProcEvent& e : out) {
      if (e.kind != ProcEvent::Kind::kFork || e.tgid != 0) continue;
      auto it = tgid_of.find(e.tid);
      if (it != tgid_of.end()) e.tgid = it->second;
    }
  }
  // A thread id freed by an exit may be taken by a fork in the same batch,
  // and a task's fork may sit in another CPU's buffer than its children's:
  // only the timestamps give the kernel's order.
  std::stable_sort(out.begin(), out.end(),
                   [](const ProcEvent& a, const ProcEvent& b) { return a.time_ns < b.time_ns; });
  return out;
}

Result<std::unique_ptr<ForkTracepoint>> ForkTracepoint::open() {
  RESCTRLFS_ASSIGN_OR_RETURN(TraceInfo info, read_trace_info());
  const std::vector<unsigned> cpus =
      parse_cpu_list(read_text_file("/sys/devices/system/cpu/online"));
  if (cpus.empty()) return Error::make(EIO, "cannot read /sys/devices/system/cpu/online");

  // Each CPU costs two descriptors (the event and the event loop's copy):
  // a large machine needs more than the usual soft limit of 1024.
  rlimit nofile{};
  const rlim_t need = 2 * cpus.size() + 256;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      nofile.rlim_cur < need) {
    nofile.rlim_cur = nofile.rlim_max == RLIM_INFINITY ? need : std::min(need, nofile.rlim_max);
    (void)setrlimit(RLIMIT_NOFILE, &nofile);
  }
  // Data pages per CPU: 32 (128 KiB with 4 KiB pages, about 1500 forks
  // between two loop turns) on small machines, fewer per CPU on large ones,
  // where the forks spread over more buffers; fewer again when the
  // locked-memory allowance for perf buffers is short.
  size_t pages = 32;
  while (pages > 4 && pages * cpus.size() > 2048) pages /= 2;

  auto tp = std::unique_ptr<ForkTracepoint>(new ForkTracepoint());
  tp->fmt_ = info.fmt;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  tp->page_ = page;
  for (unsigned cpu : cpus) {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = info.id;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    // Wake the loop for every fork: a request that reads a tasks file must
    // see a child created just before it.
    attr.wakeup_events = 1;
    // The proc connector stamps its exit events with CLOCK_MONOTONIC; the
    // same clock here orders forks against exits.
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    const int fd = static_cast<int>(
        syscall(SYS_perf_event_open, &attr, -1, static_cast<int>(cpu), -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      return Error::make(errno, "perf_event_open(sched:sched_process_fork, cpu " +
                                    std::to_string(cpu) + "): " + strerror(errno));
    }
    Ring ring;
    ring.fd = fd;
    tp->rings_.push_back(ring);
    // perf wants a power of two of data pages after the control page; the
    // size that worked is kept for the next CPUs.
    void* base = MAP_FAILED;
    size_t len = 0;
    for (;;) {
      len = (pages + 1) * page;
      base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base != MAP_FAILED || pages == 1) break;
      pages /= 2;
    }
    if (base == MAP_FAILED) {
      return Error::make(
          errno, "mmap of the perf buffer of cpu " + std::to_string(cpu) + ": " + strerror(errno));
    }
    tp->rings_.back().base = base;
    tp->rings_.back().map_len = len;
  }
  return tp;
}

ForkTracepoint::~ForkTracepoint() {
  for (Ring& r : rings_) {
    if (r.base != nullptr) munmap(r.base, r.map_len);
    if (r.fd >= 0) close(r.fd);
  }
}

std::vector<int> ForkTracepoint::fds() const {
  std::vector<int> out;
  for (const Ring& r : rings_) out.push_back(r.fd);
  return out;
}

size_t ForkTracepoint::drain(std::vector<ProcEvent>& out, uint64_t* lost) {
  size_t n = 0;
  for (Ring& r : rings_) {
    auto* meta = static_cast<perf_event_mmap_page*>(r.base);
    const char* data = static_cast<const char*>(r.base) + page_;
    uint64_t size = r.map_len - page_;
    if (meta->data_size != 0 && meta->data_offset + meta->data_size <= r.map_len) {
      data = static_cast<const char*>(r.base) + meta->data_offset;
      size = meta->data_size;
    }
    // Acquire pairs with the kernel's publication of data_head: the records
    // before it are complete.
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    const uint64_t tail = meta->data_tail;
    if (head == tail) continue;
    const uint64_t new_tail =
        walk_perf_ring(data, size, tail, head, [&](const char* rec, size_t len) {
          PerfForkRecord pr = parse_perf_record(fmt_, rec, len);
          ++n;
          if (pr.kind == PerfForkRecord::Kind::kFork) {
            out.push_back(pr.event);
          } else if (pr.kind == PerfForkRecord::Kind::kLost && lost != nullptr) {
            *lost += pr.lost;
          }
        });
    // Release: the kernel may reuse the space only after it was read.
    __atomic_store_n(&meta->data_tail, new_tail, __ATOMIC_RELEASE);
  }
  return n;
}

}  // namespace resctrlfs::daemon

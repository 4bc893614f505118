// Implements CounterStore (hw/counter_store.h).
#include "hw/counter_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace resctrlfs::hw {

namespace {

constexpr char kMagic[8] = {'R', 'S', 'C', 'T', 'R', 'L', 'C', 'N'};
constexpr size_t kAlign = 64;
constexpr size_t kMaxRegions = 8;
constexpr size_t kPlatformBytes = 48;

// The header, at offset 0. `complete` is written last: a file whose
// creation was cut short is never taken for one that holds counters.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t regions;
  uint64_t total_bytes;
  uint64_t region_bytes[kMaxRegions];
  char platform[kPlatformBytes];
  uint64_t complete;
};
static_assert(sizeof(Header) <= CounterStore::kHeaderBytes);

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Why the header `h` of a file of `file_bytes` bytes cannot be continued,
// or "" when it can.
std::string mismatch(const Header& h, size_t file_bytes, const Header& want) {
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "not a counter file";
  if (h.version != want.version)
    return "format version " + std::to_string(h.version) + ", this build reads " +
           std::to_string(want.version);
  if (std::memcmp(h.platform, want.platform, kPlatformBytes) != 0) {
    std::string p(h.platform, strnlen(h.platform, kPlatformBytes));
    return "written for platform " + p;
  }
  if (h.regions != want.regions ||
      std::memcmp(h.region_bytes, want.region_bytes, sizeof h.region_bytes) != 0 ||
      h.total_bytes != want.total_bytes)
    return "another layout (another build's or another platform's)";
  if (h.total_bytes != file_bytes)
    return std::to_string(file_bytes) + " bytes, its header says " + std::to_string(h.total_bytes);
  if (h.complete != 1) return "never completed";
  return "";
}

}  // namespace

Result<std::unique_ptr<CounterStore>> CounterStore::open(int fd, std::string_view platform,
                                                         const std::vector<size_t>& sizes,
                                                         bool take_over) {
  if (sizes.size() > kMaxRegions) return Error::make(EINVAL, "too many counter regions");
  Header want{};
  std::memcpy(want.magic, kMagic, sizeof kMagic);
  want.version = kVersion;
  want.regions = static_cast<uint32_t>(sizes.size());
  std::memcpy(want.platform, platform.data(), std::min(platform.size(), kPlatformBytes));
  std::vector<size_t> offsets;
  size_t total = kHeaderBytes;
  for (size_t i = 0; i < sizes.size(); ++i) {
    offsets.push_back(total);
    want.region_bytes[i] = sizes[i];
    total += align_up(sizes[i]);
  }
  want.total_bytes = total;

  struct stat st {};
  if (fstat(fd, &st) != 0) return Error::make(errno, "fstat");
  if (!S_ISREG(st.st_mode)) return Error::make(EINVAL, "not a regular file");
  std::string why;
  bool keep = false;
  if (take_over) {
    if (st.st_size == 0) {
      why = "empty";
    } else if (static_cast<size_t>(st.st_size) < sizeof(Header)) {
      why = "shorter than its header";
    } else {
      Header h{};
      const ssize_t n = pread(fd, &h, sizeof h, 0);
      if (n != static_cast<ssize_t>(sizeof h)) {
        why = n < 0 ? std::string("unreadable: ") + strerror(errno) : "shorter than its header";
      } else {
        why = mismatch(h, static_cast<size_t>(st.st_size), want);
        keep = why.empty();
      }
    }
  }
  if (!keep) {
    // A fresh store: zeros (truncating first clears what a longer file
    // held), allocated whole so that a full filesystem fails here and not
    // as SIGBUS at a later store into the mapping.
    if (ftruncate(fd, 0) != 0 || ftruncate(fd, static_cast<off_t>(total)) != 0)
      return Error::make(errno, std::string("cannot size the file: ") + strerror(errno));
    if (int e = posix_fallocate(fd, 0, static_cast<off_t>(total)); e != 0 && e != EOPNOTSUPP)
      return Error::make(e, std::string("cannot allocate the file: ") + strerror(e));
  }
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Error::make(errno, std::string("mmap: ") + strerror(errno));
  std::unique_ptr<CounterStore> s(
      new CounterStore(static_cast<std::byte*>(p), total, std::move(offsets)));
  s->carried_over_ = keep;
  s->why_fresh_ = why;
  if (!keep) {
    Header h = want;
    h.complete = 0;
    std::memcpy(p, &h, sizeof h);
  }
  return s;
}

CounterStore::~CounterStore() { munmap(base_, bytes_); }

void CounterStore::mark_complete() {
  auto* h = reinterpret_cast<Header*>(base_);
  __atomic_store_n(&h->complete, uint64_t{1}, __ATOMIC_RELEASE);
}

Result<std::unique_ptr<CounterStore>> keep_counters(Backend& b, int fd, bool take_over) {
  const size_t sim_bytes = b.sim != nullptr ? b.sim->counter_state_bytes() : 0;
  const size_t arch_bytes = b.arch->counter_state_bytes();
  RESCTRLFS_ASSIGN_OR_RETURN(
      std::unique_ptr<CounterStore> s,
      CounterStore::open(fd, b.platform_name, {sim_bytes, arch_bytes}, take_over));
  if (b.sim != nullptr) b.sim->keep_counter_state(s->region(0), s->carried_over());
  b.arch->keep_counter_state(s->region(1), s->carried_over());
  s->mark_complete();
  return s;
}

}  // namespace resctrlfs::hw

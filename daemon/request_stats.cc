// Implements RequestStats with the opcode numbers of the FUSE protocol
// (linux/fuse.h, a stable kernel ABI).
#include "daemon/request_stats.h"

#include <linux/fuse.h>

namespace resctrlfs::daemon {

namespace {

struct OpName {
  uint32_t opcode;
  const char* name;
};

constexpr OpName kOpNames[] = {
    {FUSE_LOOKUP, "LOOKUP"},
    {FUSE_FORGET, "FORGET"},
    {FUSE_GETATTR, "GETATTR"},
    {FUSE_SETATTR, "SETATTR"},
    {FUSE_READLINK, "READLINK"},
    {FUSE_SYMLINK, "SYMLINK"},
    {FUSE_MKNOD, "MKNOD"},
    {FUSE_MKDIR, "MKDIR"},
    {FUSE_UNLINK, "UNLINK"},
    {FUSE_RMDIR, "RMDIR"},
    {FUSE_RENAME, "RENAME"},
    {FUSE_LINK, "LINK"},
    {FUSE_OPEN, "OPEN"},
    {FUSE_READ, "READ"},
    {FUSE_WRITE, "WRITE"},
    {FUSE_STATFS, "STATFS"},
    {FUSE_RELEASE, "RELEASE"},
    {FUSE_FSYNC, "FSYNC"},
    {FUSE_SETXATTR, "SETXATTR"},
    {FUSE_GETXATTR, "GETXATTR"},
    {FUSE_LISTXATTR, "LISTXATTR"},
    {FUSE_REMOVEXATTR, "REMOVEXATTR"},
    {FUSE_FLUSH, "FLUSH"},
    {FUSE_INIT, "INIT"},
    {FUSE_OPENDIR, "OPENDIR"},
    {FUSE_READDIR, "READDIR"},
    {FUSE_RELEASEDIR, "RELEASEDIR"},
    {FUSE_FSYNCDIR, "FSYNCDIR"},
    {FUSE_GETLK, "GETLK"},
    {FUSE_SETLK, "SETLK"},
    {FUSE_SETLKW, "SETLKW"},
    {FUSE_ACCESS, "ACCESS"},
    {FUSE_CREATE, "CREATE"},
    {FUSE_INTERRUPT, "INTERRUPT"},
    {FUSE_BMAP, "BMAP"},
    {FUSE_DESTROY, "DESTROY"},
    {FUSE_IOCTL, "IOCTL"},
    {FUSE_POLL, "POLL"},
    {FUSE_NOTIFY_REPLY, "NOTIFY_REPLY"},
    {FUSE_BATCH_FORGET, "BATCH_FORGET"},
    {FUSE_FALLOCATE, "FALLOCATE"},
    {FUSE_READDIRPLUS, "READDIRPLUS"},
    {FUSE_RENAME2, "RENAME2"},
    {FUSE_LSEEK, "LSEEK"},
    {FUSE_COPY_FILE_RANGE, "COPY_FILE_RANGE"},
    {FUSE_SETUPMAPPING, "SETUPMAPPING"},
    {FUSE_REMOVEMAPPING, "REMOVEMAPPING"},
    {FUSE_SYNCFS, "SYNCFS"},
    {FUSE_TMPFILE, "TMPFILE"},
};

constexpr size_t kOther = RequestStats::kMaxOpcode + 1;

}  // namespace

const char* RequestStats::opcode_name(uint32_t opcode) {
  for (const OpName& op : kOpNames) {
    if (op.opcode == opcode) return op.name;
  }
  return nullptr;
}

void RequestStats::count(uint32_t opcode) {
  const size_t slot = opcode <= kMaxOpcode && opcode_name(opcode) ? opcode : kOther;
  counts_[slot].fetch_add(1, std::memory_order_relaxed);
}

void RequestStats::reset() {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> RequestStats::snapshot() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  out.reserve(std::size(kOpNames) + 1);
  for (const OpName& op : kOpNames) {
    out.emplace_back(op.name, counts_[op.opcode].load(std::memory_order_relaxed));
  }
  out.emplace_back("OTHER", counts_[kOther].load(std::memory_order_relaxed));
  return out;
}

uint64_t RequestStats::get(std::string_view name) const {
  for (const OpName& op : kOpNames) {
    if (name == op.name) return counts_[op.opcode].load(std::memory_order_relaxed);
  }
  if (name == "OTHER") return counts_[kOther].load(std::memory_order_relaxed);
  return 0;
}

}  // namespace resctrlfs::daemon

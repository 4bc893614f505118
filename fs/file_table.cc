// Defines the file table (every resctrl file as one row: name, mode, the
// flags a directory needs to get it, show, write, an optional presence
// condition), put together from the rows each part defines next to its
// handlers (fs/file_rows.h), and last_cmd_status's buffer semantics.
#include <cstring>
#include <iterator>

#include "fs/file_rows.h"

namespace resctrlfs::fs::internal {

void LastCmdStatus::puts(std::string_view s) {
  if (s.empty()) return;
  // seq_buf_puts needs room for the string and its terminating NUL.
  if (len_ <= kSize && len_ + s.size() + 1 <= kSize) {
    std::memcpy(buf_ + len_, s.data(), s.size());
    buf_[len_ + s.size()] = '\0';
    len_ += s.size();
    return;
  }
  len_ = kSize + 1;
}

void LastCmdStatus::printf(std::string_view s) {
  if (len_ < kSize) {
    size_t room = kSize - len_;  // vsnprintf writes at most room-1 chars + NUL
    size_t n = s.size() < room - 1 ? s.size() : room - 1;
    std::memcpy(buf_ + len_, s.data(), n);
    buf_[len_ + n] = '\0';
    if (len_ + s.size() < kSize) {
      len_ += s.size();
      return;
    }
  }
  len_ = kSize + 1;
}

std::string LastCmdStatus::show() const {
  if (len_ == 0) return "ok\n";
  size_t used = len_ > kSize ? kSize : len_;
  size_t n = strnlen(buf_, used);
  std::string out(buf_, n);
  if (len_ > kSize) out += "[truncated]\n";
  return out;
}

const std::vector<FileRow>& file_table() {
  // The order in which a directory gets its rows, hence its files' inode
  // numbers: each part's rows in order, the parts in this order.
  static const std::vector<FileRow> rows = [] {
    std::vector<FileRow> r;
    for (FileRows part :
         {info_file_rows(), io_alloc_file_rows(), mon_info_file_rows(), membership_file_rows(),
          ctrl_file_rows(), mon_group_file_rows(), debug_file_rows(), io_channel_file_rows()})
      r.insert(r.end(), part.begin(), part.end());
    return r;
  }();
  return rows;
}

}  // namespace resctrlfs::fs::internal

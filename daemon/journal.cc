// Implements StateJournal and its record encoding (see journal.h for the
// format and the durability argument).
#include "daemon/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

namespace resctrlfs::daemon {

namespace {

constexpr std::string_view kMagic = "resctrlfs-state 1\n";

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[i] = c;
  }
  return t;
}

Error corrupt(const std::string& why) { return Error::make(EBADMSG, why); }

Error sys_error(const std::string& what, const std::string& path) {
  const int e = errno;
  return Error::make(e, "state journal: " + what + " " + path + ": " + std::strerror(e));
}

// Parses "<key> <decimal>\n" at the front of `in`.
bool take_field(std::string_view& in, std::string_view key, uint64_t& out, int base = 10) {
  if (in.substr(0, key.size()) != key || in.size() <= key.size() || in[key.size()] != ' ')
    return false;
  in.remove_prefix(key.size() + 1);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos || nl == 0 || nl > 20) return false;
  std::string_view num = in.substr(0, nl);
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), out, base);
  if (ec != std::errc() || ptr != num.data() + num.size()) return false;
  in.remove_prefix(nl + 1);
  return true;
}

Result<void> write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFU;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

std::string encode_journal_record(const JournalRecord& rec) {
  char head[128];
  std::snprintf(head, sizeof(head), "generation %llu\nlength %zu\ncrc32c %08x\n\n",
                static_cast<unsigned long long>(rec.generation), rec.body.size(), crc32c(rec.body));
  std::string out(kMagic);
  out += head;
  out += rec.body;
  return out;
}

Result<JournalRecord> decode_journal_record(std::string_view in) {
  if (in.empty()) return corrupt("empty file (torn before the header)");
  if (in.substr(0, kMagic.size()) != kMagic) {
    if (kMagic.substr(0, in.size()) == in) return corrupt("torn inside the header");
    return corrupt("not a resctrlfs state journal (bad magic)");
  }
  in.remove_prefix(kMagic.size());
  JournalRecord rec;
  uint64_t length = 0, crc = 0;
  if (!take_field(in, "generation", rec.generation) || rec.generation == 0 ||
      !take_field(in, "length", length) || !take_field(in, "crc32c", crc, 16) || crc > UINT32_MAX ||
      in.empty() || in[0] != '\n')
    return corrupt("bad or torn header");
  in.remove_prefix(1);
  if (in.size() < length) {
    return corrupt("torn: body has " + std::to_string(in.size()) + " of " + std::to_string(length) +
                   " bytes");
  }
  if (in.size() > length) return corrupt("trailing bytes after the body");
  if (crc32c(in) != crc) return corrupt("checksum mismatch");
  rec.body = std::string(in);
  return rec;
}

std::string make_journal_body(std::string_view platform, std::string_view fs_state) {
  std::string out = "{\"platform\":";
  out += nlohmann::json(std::string(platform)).dump();
  out += ",\"fs\":";
  out += fs_state;
  out += "}";
  return out;
}

Result<JournalBody> parse_journal_body(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt("body is not a JSON object");
  auto p = j.find("platform");
  auto f = j.find("fs");
  if (p == j.end() || !p->is_string() || f == j.end() || !f->is_object())
    return corrupt("body lacks platform or fs");
  return JournalBody{p->get<std::string>(), f->dump()};
}

StateJournal::StateJournal(std::string dir, int dir_fd)
    : dir_(std::move(dir)),
      path_(dir_ + "/" + kJournalFile),
      tmp_path_(dir_ + "/" + kJournalTmpFile),
      dir_fd_(dir_fd) {}

StateJournal::~StateJournal() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Result<std::unique_ptr<StateJournal>> StateJournal::open(const std::string& dir) {
  if (dir.empty()) return Error::make(EINVAL, "state journal: empty directory name");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("mkdir", dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sys_error("open", dir);
  std::unique_ptr<StateJournal> j(new StateJournal(dir, fd));
  // A temporary file is a commit that never reached its rename: the
  // journal itself still holds the state before it.
  if (::unlink(j->tmp_path_.c_str()) != 0 && errno != ENOENT)
    return sys_error("unlink", j->tmp_path_);
  return j;
}

Result<std::optional<JournalRecord>> StateJournal::load() {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<JournalRecord>();
    return sys_error("open", path_);
  }
  std::string data;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = sys_error("read", path_);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxJournalBytes) {
      ::close(fd);
      return corrupt("larger than " + std::to_string(kMaxJournalBytes) + " bytes");
    }
  }
  ::close(fd);
  RESCTRLFS_ASSIGN_OR_RETURN(JournalRecord rec, decode_journal_record(data));
  generation_ = rec.generation;
  last_body_ = rec.body;
  return std::optional<JournalRecord>(std::move(rec));
}

Result<void> StateJournal::fsync_dir() {
  if (::fsync(dir_fd_) != 0) return sys_error("fsync", dir_);
  return Ok();
}

Result<void> StateJournal::commit(const std::string& body) {
  if (last_body_ && *last_body_ == body) return Ok();
  JournalRecord rec{generation_ + 1, body};
  const std::string bytes = encode_journal_record(rec);
  const int fd = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("create", tmp_path_);
  Result<void> w = write_all(fd, bytes, tmp_path_);
  if (w.ok() && ::fsync(fd) != 0) w = sys_error("fsync", tmp_path_);
  if (::close(fd) != 0 && w.ok()) w = sys_error("close", tmp_path_);
  if (!w.ok()) {
    (void)::unlink(tmp_path_.c_str());
    return w;
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    Error e = sys_error("rename", tmp_path_);
    (void)::unlink(tmp_path_.c_str());
    return e;
  }
  // The rename is durable only once the directory is.
  RESCTRLFS_RETURN_IF_ERROR(fsync_dir());
  generation_ = rec.generation;
  last_body_ = body;
  ++writes_;
  return Ok();
}

Result<void> StateJournal::commit_state(const std::string& platform, fs::Filesystem& fs) {
  return commit(make_journal_body(platform, fs.save_state_json()));
}

Result<void> StateJournal::clear() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) return sys_error("unlink", path_);
  (void)::unlink(tmp_path_.c_str());
  last_body_.reset();
  return fsync_dir();
}

Result<std::unique_ptr<StateJournal>> StateJournal::open_and_restore(const std::string& dir,
                                                                     const std::string& platform,
                                                                     fs::Filesystem& fs) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::unique_ptr<StateJournal> j, open(dir));
  const std::string refuse = "; refusing to start so that it is not half-applied or lost (move " +
                             j->path() + " away to start with a fresh resctrl tree)";
  Result<std::optional<JournalRecord>> rec = j->load();
  if (!rec.ok()) {
    return Error::make(rec.error().code, "state journal " + j->path() +
                                             " is corrupt: " + rec.error().message + refuse);
  }
  if (!rec->has_value()) {
    spdlog::info("state journal {}: none, starting with a fresh tree", j->path());
    return j;
  }
  Result<JournalBody> body = parse_journal_body((*rec)->body);
  if (!body.ok()) {
    return Error::make(
        EBADMSG, "state journal " + j->path() + " is corrupt: " + body.error().message + refuse);
  }
  if (body->platform != platform) {
    return Error::make(EINVAL, "state journal " + j->path() + " was written for platform '" +
                                   body->platform + "', this daemon runs '" + platform + "'" +
                                   refuse);
  }
  // The mount options are part of what the state means (CDP splits the
  // schemata): they must be the ones this daemon just mounted with.
  const nlohmann::json saved = nlohmann::json::parse(body->fs_state, nullptr, false);
  const nlohmann::json fresh = nlohmann::json::parse(fs.save_state_json(), nullptr, false);
  if (saved.is_object() && fresh.is_object() && saved.contains("options") &&
      fresh.contains("options") && saved["options"] != fresh["options"]) {
    return Error::make(EINVAL, "state journal " + j->path() + " was written with mount options " +
                                   saved["options"].dump() + ", this daemon mounted with " +
                                   fresh["options"].dump() + refuse);
  }
  Result<void> r = fs.restore_state_json(body->fs_state);
  if (!r.ok()) {
    return Error::make(r.error().code, "state journal " + j->path() + " (generation " +
                                           std::to_string((*rec)->generation) +
                                           ") cannot be restored: " + r.error().message + refuse);
  }
  spdlog::info("state journal {}: restored generation {}", j->path(), (*rec)->generation);
  // Threads that died meanwhile are gone from the model: record that now.
  RESCTRLFS_RETURN_IF_ERROR(j->commit_state(platform, fs));
  return j;
}

}  // namespace resctrlfs::daemon

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

constexpr const char* kFormat = "resctrlfs-state";

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
  char crc[16];
  std::snprintf(crc, sizeof(crc), "%08x", crc32c(rec.body));
  nlohmann::json j = {{"format", kFormat},         {"version", 1},  {"generation", rec.generation},
                      {"length", rec.body.size()}, {"crc32c", crc}, {"body", rec.body}};
  return j.dump() + "\n";
}

Result<JournalRecord> decode_journal_record(std::string_view in) {
  if (in.empty()) return corrupt("empty file (torn before the first byte)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt("torn or not JSON");
  // Every field is type-checked before use: the file is outside input.
  if (!j.is_object()) return corrupt("not a resctrlfs state journal");
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kFormat)
    return corrupt("not a resctrlfs state journal");
  auto gen = j.find("generation");
  auto len = j.find("length");
  auto crc = j.find("crc32c");
  auto body = j.find("body");
  auto ver = j.find("version");
  if (ver == j.end() || *ver != 1) return corrupt("unsupported version");
  if (gen == j.end() || !gen->is_number_unsigned() || gen->get<uint64_t>() == 0 || len == j.end() ||
      !len->is_number_unsigned() || crc == j.end() || !crc->is_string() || body == j.end() ||
      !body->is_string())
    return corrupt("bad envelope");
  JournalRecord rec;
  rec.generation = gen->get<uint64_t>();
  rec.body = body->get<std::string>();
  if (rec.body.size() != len->get<uint64_t>()) {
    return corrupt("length mismatch: body has " + std::to_string(rec.body.size()) + " of " +
                   std::to_string(len->get<uint64_t>()) + " bytes");
  }
  uint64_t want = 0;
  const std::string hex = crc->get<std::string>();
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), want, 16);
  if (hex.size() != 8 || ec != std::errc() || ptr != hex.data() + hex.size())
    return corrupt("bad envelope");
  if (crc32c(rec.body) != want) return corrupt("checksum mismatch");
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
  if (w.ok() && fsync_ && ::fsync(fd) != 0) w = sys_error("fsync", tmp_path_);
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
  if (fsync_) RESCTRLFS_RETURN_IF_ERROR(fsync_dir());
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
  // Why the journal cannot be applied, or empty.
  std::string why;
  uint64_t generation = 0;
  bool touched_fs = false;
  // The options of the fresh mount, to mount again if a restore fails.
  const nlohmann::json fresh = nlohmann::json::parse(fs.save_state_json(), nullptr, false);
  fs::MountOptions opts;
  if (fresh.is_object() && fresh.contains("options") && fresh["options"].is_object()) {
    const nlohmann::json& o = fresh["options"];
    opts.cdp = o.value("cdp", false);
    opts.cdpl2 = o.value("cdpl2", false);
    opts.mba_mbps = o.value("mba_MBps", false);
    opts.debug = o.value("debug", false);
  }
  Result<std::optional<JournalRecord>> rec = j->load();
  if (!rec.ok()) {
    why = "corrupt: " + rec.error().message;
  } else if (!rec->has_value()) {
    spdlog::info("state journal {}: none, starting with a fresh tree", j->path());
    return j;
  } else {
    generation = (*rec)->generation;
    Result<JournalBody> body = parse_journal_body((*rec)->body);
    if (!body.ok()) {
      why = "corrupt: " + body.error().message;
    } else if (body->platform != platform) {
      why = "written for platform '" + body->platform + "', this daemon runs '" + platform + "'";
    } else {
      // The mount options are part of what the state means (CDP splits
      // the schemata): they must be the ones this daemon mounted with.
      const nlohmann::json saved = nlohmann::json::parse(body->fs_state, nullptr, false);
      if (saved.is_object() && fresh.is_object() && saved.contains("options") &&
          fresh.contains("options") && saved["options"] != fresh["options"]) {
        why = "written with mount options " + saved["options"].dump() +
              ", this daemon mounted with " + fresh["options"].dump();
      } else {
        touched_fs = true;
        Result<void> r = fs.restore_state_json(body->fs_state);
        if (!r.ok()) why = "cannot be restored: " + r.error().message;
      }
    }
  }
  if (why.empty()) {
    j->outcome_ = Outcome::kRestored;
    spdlog::info("state journal {}: restored generation {}", j->path(), generation);
    // Threads that died meanwhile are gone from the model: record that now.
    RESCTRLFS_RETURN_IF_ERROR(j->commit_state(platform, fs));
    return j;
  }

  // Never half-applied: back to the fresh tree, the journal kept aside.
  j->outcome_ = Outcome::kRejected;
  j->rejected_reason_ = why;
  if (touched_fs) {
    fs.unmount();
    RESCTRLFS_RETURN_IF_ERROR(fs.mount(opts));
  }
  const std::string aside = j->path() + kJournalRejectedSuffix;
  if (::rename(j->path().c_str(), aside.c_str()) != 0) return sys_error("rename", j->path());
  (void)j->fsync_dir();
  j->generation_ = generation;
  j->last_body_.reset();
  spdlog::error(
      "state journal {} (generation {}) is NOT restored, it is {}; moved to {}; starting "
      "with a fresh resctrl tree",
      j->path(), generation, why, aside);
  return j;
}

}  // namespace resctrlfs::daemon

// Implements StateJournal and its record encoding (see journal.h for the
// format and the durability argument).
#include "daemon/journal.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "daemon/private_dir.h"
#include "fs/state_replay.h"

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

namespace {

uint32_t crc32c_table(uint32_t c, std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  for (unsigned char b : data) c = table[(c ^ b) & 0xFFU] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes CRC-32C: ~10x fewer instructions for
// the record of every journaled command.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t c, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, static_cast<unsigned char>(*p));
  return c;
}
#endif

}  // namespace

uint32_t crc32c(std::string_view data) {
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  if (hw) return crc32c_sse42(0xFFFFFFFFU, data) ^ 0xFFFFFFFFU;
#endif
  return crc32c_table(0xFFFFFFFFU, data) ^ 0xFFFFFFFFU;
}

uint32_t crc32c_portable(std::string_view data) {
  return crc32c_table(0xFFFFFFFFU, data) ^ 0xFFFFFFFFU;
}

namespace {

// Appends `s` as a JSON string, with the escapes nlohmann::json's dump()
// writes (\" \\ \b \f \n \r \t, other bytes below 0x20 as \u00xx, the rest
// as they are), when `s` is ASCII; false (nothing appended) otherwise: bytes
// of 0x80 and up need dump()'s UTF-8 check. A snapshot's body is the whole
// model's text (~2 MB at 4000 groups, a quote every few bytes): dump() spent
// ~10 instructions per byte on it; this measures the result first and then
// fills it in place.
bool append_ascii_json_string(std::string_view s, std::string& out) {
  // The length of each ASCII byte's form.
  static constexpr std::array<uint8_t, 128> kLen = [] {
    std::array<uint8_t, 128> t{};
    for (int c = 0; c < 128; ++c) t[c] = c < 0x20 ? 6 : 1;
    for (char c : {'\b', '\f', '\n', '\r', '\t', '"', '\\'}) t[static_cast<uint8_t>(c)] = 2;
    return t;
  }();
  size_t n = 2;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) return false;
    n += kLen[c];
  }
  const size_t at = out.size();
  out.resize(at + n);
  char* p = out.data() + at;
  *p++ = '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (kLen[c] == 1) {
      *p++ = ch;
      continue;
    }
    *p++ = '\\';
    switch (c) {
      case '"':
        *p++ = '"';
        break;
      case '\\':
        *p++ = '\\';
        break;
      case '\b':
        *p++ = 'b';
        break;
      case '\f':
        *p++ = 'f';
        break;
      case '\n':
        *p++ = 'n';
        break;
      case '\r':
        *p++ = 'r';
        break;
      case '\t':
        *p++ = 't';
        break;
      default:
        static constexpr char kHex[] = "0123456789abcdef";
        *p++ = 'u';
        *p++ = '0';
        *p++ = '0';
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 0xF];
    }
  }
  *p = '"';
  return true;
}

}  // namespace

std::string encode_journal_record(const JournalRecord& rec) {
  char crc[16];
  std::snprintf(crc, sizeof(crc), "%08x", crc32c(rec.body));
  // The envelope's keys in the order dump() prints an object's.
  std::string out = "{\"body\":";
  if (!append_ascii_json_string(rec.body, out)) out += nlohmann::json(rec.body).dump();
  out += ",\"crc32c\":\"";
  out += crc;
  out += "\",\"format\":\"";
  out += kFormat;
  out += "\",\"generation\":";
  out += std::to_string(rec.generation);
  out += ",\"length\":";
  out += std::to_string(rec.body.size());
  out += ",\"version\":1}\n";
  return out;
}

Result<JournalRecord> decode_journal_record(std::string_view in) {
  if (in.empty()) return corrupt("empty file (torn before the first byte)");
  Result<nlohmann::json> parsed = parse_json(in);
  if (!parsed.ok()) return corrupt("torn or not JSON: " + parsed.error().message);
  const nlohmann::json& j = *parsed;
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

std::string make_journal_body(std::string_view platform, std::string_view fs_state,
                              std::string_view applied) {
  std::string out = "{\"platform\":";
  out += nlohmann::json(std::string(platform)).dump();
  out += ",\"fs\":";
  out += fs_state;
  if (!applied.empty()) {
    out += ",\"applied\":";
    out += applied;
  }
  out += "}";
  return out;
}

namespace {

// A [unique, result] pair of "applied" or "req".
bool applied_pair(const nlohmann::json& e, std::pair<uint64_t, int64_t>& out) {
  if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() || !e[1].is_number_integer())
    return false;
  out = {e[0].get<uint64_t>(), e[1].get<int64_t>()};
  return true;
}

}  // namespace

Result<JournalBody> parse_journal_body(std::string_view body) {
  Result<nlohmann::json> parsed = parse_json(body);
  if (!parsed.ok()) return corrupt("body is not JSON: " + parsed.error().message);
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return corrupt("body is not a JSON object");
  auto p = j.find("platform");
  auto f = j.find("fs");
  if (p == j.end() || !p->is_string() || f == j.end() || !f->is_object())
    return corrupt("body lacks platform or fs");
  JournalBody out{p->get<std::string>(), f->dump(), {}};
  if (auto a = j.find("applied"); a != j.end()) {
    if (!a->is_array()) return corrupt("body's applied is not a list");
    for (const nlohmann::json& e : *a) {
      std::pair<uint64_t, int64_t> pr;
      if (!applied_pair(e, pr)) return corrupt("body's applied has a bad entry");
      out.applied.push_back(pr);
    }
  }
  return out;
}

namespace {

constexpr std::string_view kLogMagic = "RLOG ";

// Writes `digits` lower-case hex digits of `v` at `out`.
void hex_into(char* out, uint64_t v, int digits) {
  static const char* kDigits = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 0xF];
}

bool get_hex(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return true;
}

}  // namespace

// Header: "RLOG " seq(16) ' ' len(8) ' ' bcrc(8) ' ' hcrc(8) '\n' = 49 bytes,
// then the body, then log_record_padding(len) spaces and '\n': every record
// is a multiple of kLogRecordAlign bytes, so that in a mapped log each one
// starts on an 8-byte boundary and its first 8 bytes can be its commit word.
std::string encode_log_record(uint64_t seq, std::string_view body) {
  char h[kLogHeaderBytes];
  std::memcpy(h, kLogMagic.data(), kLogMagic.size());
  hex_into(h + 5, seq, 16);
  h[21] = ' ';
  hex_into(h + 22, body.size(), 8);
  h[30] = ' ';
  hex_into(h + 31, crc32c(body), 8);
  h[39] = ' ';
  hex_into(h + 40, crc32c(std::string_view(h, 40)), 8);
  h[48] = '\n';
  std::string out;
  out.reserve(log_record_size(body.size()));
  out.append(h, sizeof(h));
  out += body;
  out.append(log_record_padding(body.size()), ' ');
  out += '\n';
  return out;
}

Result<LogContents> decode_log(std::string_view in) {
  LogContents out;
  // A filesystem that extended the file before writing it may leave zeros,
  // and a mapped log is zeros past its last record.
  const size_t in_last = in.find_last_not_of('\0');
  size_t pos = 0;
  while (in_last != std::string_view::npos && pos <= in_last) {
    std::string_view rest = in.substr(pos);
    const std::string at = " at byte " + std::to_string(pos);
    const size_t last = in_last - pos;  // of rest
    // A mapped log's append writes the record but its first 8 bytes, then
    // those in one store (its commit word): a record cut short there has a
    // zero commit word and is never longer than kMaxMappedRecordBytes.
    if (rest.size() >= kLogRecordAlign &&
        rest.substr(0, kLogRecordAlign).find_first_not_of('\0') == std::string_view::npos) {
      if (last >= kMaxMappedRecordBytes) return corrupt("log: data after its end" + at);
      out.torn_tail = true;
      break;
    }
    if (rest.size() < kLogHeaderBytes) {
      if (kLogMagic.substr(0, std::min(rest.size(), kLogMagic.size())) !=
          rest.substr(0, std::min(rest.size(), kLogMagic.size())))
        return corrupt("log: not a record" + at);
      out.torn_tail = true;
      break;
    }
    std::string_view h = rest.substr(0, kLogHeaderBytes);
    uint64_t seq = 0, len = 0, bcrc = 0, hcrc = 0;
    if (h.substr(0, kLogMagic.size()) != kLogMagic || h[21] != ' ' || h[30] != ' ' ||
        h[39] != ' ' || h[48] != '\n' || !get_hex(h.substr(5, 16), seq) ||
        !get_hex(h.substr(22, 8), len) || !get_hex(h.substr(31, 8), bcrc) ||
        !get_hex(h.substr(40, 8), hcrc))
      return corrupt("log: bad record header" + at);
    if (crc32c(h.substr(0, 40)) != hcrc) return corrupt("log: header checksum mismatch" + at);
    if (len > kMaxJournalBytes) return corrupt("log: record too long" + at);
    const size_t size = log_record_size(len);
    if (rest.size() < size) {
      out.torn_tail = true;
      break;
    }
    std::string_view body = rest.substr(kLogHeaderBytes, len);
    const std::string_view end = rest.substr(kLogHeaderBytes + len, size - kLogHeaderBytes - len);
    if (end.back() != '\n' || end.find_first_not_of(' ') != end.size() - 1)
      return corrupt("log: bad record end" + at);
    if (crc32c(body) != bcrc) return corrupt("log: checksum mismatch" + at);
    out.records.push_back(JournalRecord{seq, std::string(body)});
    pos += size;
    out.valid_bytes = pos;
  }
  return out;
}

namespace {

// Reads the whole file `name` of the directory `dir_fd` (`path` names it in
// messages). nullopt when it does not exist; a symlink there is ELOOP, never
// followed.
Result<std::optional<std::string>> read_whole(int dir_fd, const char* name,
                                              const std::string& path) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return sys_error("open", path);
  }
  std::string data;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = sys_error("read", path);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxJournalBytes) {
      ::close(fd);
      return corrupt(path + " is larger than " + std::to_string(kMaxJournalBytes) + " bytes");
    }
  }
  ::close(fd);
  return std::optional<std::string>(std::move(data));
}

}  // namespace

StateJournal::StateJournal(std::string dir, int dir_fd)
    : dir_(std::move(dir)),
      path_(dir_ + "/" + kJournalFile),
      tmp_path_(dir_ + "/" + kJournalTmpFile),
      log_path_(dir_ + "/" + kJournalLogFile),
      dir_fd_(dir_fd) {}

StateJournal::~StateJournal() {
  unmap_log();
  if (spare_fd_ >= 0) ::close(spare_fd_);
  if (log_fd_ >= 0) ::close(log_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Result<std::unique_ptr<StateJournal>> StateJournal::open(const std::string& dir) {
  if (dir.empty()) return Error::make(EINVAL, "state journal: empty directory name");
  // Every file below is reached through this descriptor, never by path.
  RESCTRLFS_ASSIGN_OR_RETURN(PrivateDir pdir, PrivateDir::open(dir, "state journal", true));
  std::unique_ptr<StateJournal> j(new StateJournal(pdir.path(), pdir.release()));
  // A temporary file is a snapshot that never reached its rename: the
  // snapshot and log on disk still hold the state before it.
  if (::unlinkat(j->dir_fd_, kJournalTmpFile, 0) != 0 && errno != ENOENT)
    return sys_error("unlink", j->tmp_path_);
  return j;
}

Result<std::optional<JournalRecord>> StateJournal::load() {
  RESCTRLFS_ASSIGN_OR_RETURN(std::optional<std::string> data,
                             read_whole(dir_fd_, kJournalFile, path_));
  if (!data) return std::optional<JournalRecord>();
  RESCTRLFS_ASSIGN_OR_RETURN(JournalRecord rec, decode_journal_record(*data));
  generation_ = rec.generation;
  last_body_ = rec.body;
  return std::optional<JournalRecord>(std::move(rec));
}

Result<std::vector<std::string>> StateJournal::load_log(uint64_t gen) {
  RESCTRLFS_ASSIGN_OR_RETURN(std::optional<std::string> data,
                             read_whole(dir_fd_, kJournalLogFile, log_path_));
  std::vector<std::string> live;
  if (!data) return live;
  RESCTRLFS_ASSIGN_OR_RETURN(LogContents log, decode_log(*data));
  if (log.torn_tail) {
    spdlog::warn(
        "state journal {}: last record cut short at byte {} (a crash during its append; "
        "its command was never acknowledged), dropped",
        log_path_, log.valid_bytes);
  }
  uint64_t prev = 0;
  for (JournalRecord& r : log.records) {
    // Records are consecutive; those up to the snapshot's generation were
    // compacted into it.
    if (prev != 0 && r.generation != prev + 1) {
      return corrupt("log: record " + std::to_string(r.generation) + " follows " +
                     std::to_string(prev));
    }
    prev = r.generation;
    if (r.generation <= gen) continue;
    if (live.empty() && r.generation != gen + 1) {
      return corrupt("log: first record after snapshot " + std::to_string(gen) + " is " +
                     std::to_string(r.generation));
    }
    live.push_back(std::move(r.body));
  }
  generation_ = std::max(generation_, prev);
  return live;
}

Result<void> StateJournal::fsync_dir() {
  if (::fsync(dir_fd_) != 0) return sys_error("fsync", dir_);
  return Ok();
}

Result<void> StateJournal::open_log() {
  if (log_fd_ >= 0) return Ok();
  log_fd_ = ::openat(dir_fd_, kJournalLogFile, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                     0600);
  if (log_fd_ < 0) return sys_error("open", log_path_);
  // On tmpfs (the shipped /run/resctrlfs) the page cache is the file:
  // fdatasync has nothing to write, so the record's syscall is skipped.
  struct statfs sfs;
  log_in_memory_ =
      ::fstatfs(log_fd_, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
  struct stat st;
  if (::fstat(log_fd_, &st) != 0) return sys_error("stat", log_path_);
  log_bytes_ = static_cast<uint64_t>(st.st_size);
  if (log_bytes_ != 0) log_since_ = std::chrono::steady_clock::now();
  // The records' fdatasync does not make the file's name durable.
  if (fsync_) RESCTRLFS_RETURN_IF_ERROR(fsync_dir());
  return Ok();
}

void StateJournal::unmap_log() {
  if (map_ != nullptr) ::munmap(map_, kMappedLogBytes);
  map_ = nullptr;
}

void StateJournal::map_log() {
  // Only an empty log in memory is mapped: its records are then stores into
  // the page cache, which is the file, instead of a write(2) each. The file
  // is allocated whole first, so that no store can fault for want of space
  // (SIGBUS); without that (tmpfs full, or a filesystem that cannot), the
  // log is written with write(2).
  if (!map_allowed_ || !log_in_memory_ || map_ != nullptr || log_bytes_ != 0) return;
  auto give_up = [this](const char* what) {
    spdlog::warn("state journal {}: cannot {} {} bytes ({}), appending with write(2)", log_path_,
                 what, kMappedLogBytes, std::strerror(errno));
    map_allowed_ = false;
    (void)::ftruncate(log_fd_, 0);
  };
  if (::fallocate(log_fd_, 0, 0, static_cast<off_t>(kMappedLogBytes)) != 0)
    return give_up("allocate");
  void* p = ::mmap(nullptr, kMappedLogBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   log_fd_, 0);
  if (p == MAP_FAILED) return give_up("map");
  map_ = static_cast<char*>(p);
}

Result<void> StateJournal::truncate_log() {
  RESCTRLFS_RETURN_IF_ERROR(open_log());
  if (log_bytes_ != 0 || map_ != nullptr) {
    // Unmapped first: a mapping may not outlive its pages.
    unmap_log();
    if (::ftruncate(log_fd_, 0) != 0) return sys_error("truncate", log_path_);
    log_reserved_ = false;  // the truncation freed the blocks past the end too
    if (fsync_ && !log_in_memory_ && ::fdatasync(log_fd_) != 0)
      return sys_error("fdatasync", log_path_);
    log_bytes_ = 0;
  }
  map_log();
  return Ok();
}

void StateJournal::drop_spare() {
  if (spare_fd_ < 0) return;
  ::close(spare_fd_);
  spare_fd_ = -1;
  spare_bytes_ = 0;
  (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
}

Result<void> StateJournal::reserve_log() {
  RESCTRLFS_RETURN_IF_ERROR(open_log());
  // A mapped log was allocated whole before it was mapped.
  if (map_ != nullptr || log_reserved_ || !reserve_supported_) return Ok();
  // Blocks past the end: the appends that follow fill them without asking
  // the filesystem for more.
  if (::fallocate(log_fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(kMappedLogBytes)) != 0) {
    if (errno == EOPNOTSUPP) {
      reserve_supported_ = false;
      return Ok();
    }
    return sys_error("allocate", log_path_);
  }
  log_reserved_ = true;
  return Ok();
}

Result<void> StateJournal::reserve_snapshot() {
  if (!reserve_supported_) return Ok();
  // The next snapshot holds the last one and what the log added to it (a
  // record carries at least the state it adds); a command's own change is
  // small next to the headroom (prepare() journaled everything before it).
  // A compaction that outgrows the spare writes past it, and only a
  // compaction's failure is harmless. Grown by an eighth more than needed,
  // so that a growing log does not ask the filesystem at every command.
  const uint64_t base = snapshot_bytes_ + log_bytes_;
  const uint64_t want = base + base / 4 + kMaxMappedRecordBytes;
  if (spare_fd_ >= 0 && spare_bytes_ >= want) return Ok();
  const uint64_t size = want + base / 8;
  if (spare_fd_ < 0) {
    // A new file, never one found there (see commit()).
    if (::unlinkat(dir_fd_, kJournalTmpFile, 0) != 0 && errno != ENOENT)
      return sys_error("unlink", tmp_path_);
    spare_fd_ = ::openat(dir_fd_, kJournalTmpFile,
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (spare_fd_ < 0) return sys_error("create", tmp_path_);
    spare_bytes_ = 0;
  }
  if (::fallocate(spare_fd_, 0, 0, static_cast<off_t>(size)) != 0) {
    if (errno == EOPNOTSUPP) {
      reserve_supported_ = false;
      drop_spare();
      return Ok();
    }
    return sys_error("allocate", tmp_path_);
  }
  spare_bytes_ = size;
  return Ok();
}

Result<void> StateJournal::prepare(const std::string& platform, fs::Filesystem& fs) {
  // Everything that changed before the command goes first (a snapshot when
  // one is owed or the log is full), so that what follows the command is
  // its own change alone, which the reserved room holds.
  RESCTRLFS_RETURN_IF_ERROR(commit_state(platform, fs));
  RESCTRLFS_RETURN_IF_ERROR(reserve_log());
  return reserve_snapshot();
}

Result<void> StateJournal::commit(const std::string& body) {
  if (!need_snapshot_ && last_body_ && *last_body_ == body && log_bytes_ == 0) return Ok();
  // Owed until this snapshot and the log's truncation are done, even when
  // it fails before its rename: fs/ handed its document over with the
  // marks of what changed (take_state_snapshot_json), so no delta can
  // carry those changes any more.
  need_snapshot_ = true;
  JournalRecord rec{generation_ + 1, body};
  const std::string bytes = encode_journal_record(rec);
  int fd = spare_fd_;
  if (fd >= 0) {
    // The spare allocated by prepare(): written from its start, cut to the
    // record's length.
    spare_fd_ = -1;
    spare_bytes_ = 0;
    if (::lseek(fd, 0, SEEK_SET) != 0) {
      Error e = sys_error("seek", tmp_path_);
      ::close(fd);
      (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
      return e;
    }
  } else {
    // A new file, never one found there: whatever a crash left under the
    // temporary name goes first.
    if (::unlinkat(dir_fd_, kJournalTmpFile, 0) != 0 && errno != ENOENT)
      return sys_error("unlink", tmp_path_);
    fd = ::openat(dir_fd_, kJournalTmpFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    if (fd < 0) return sys_error("create", tmp_path_);
  }
  Result<void> w = write_all(fd, bytes, tmp_path_);
  if (w.ok() && ::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0)
    w = sys_error("truncate", tmp_path_);
  if (w.ok() && fsync_ && ::fsync(fd) != 0) w = sys_error("fsync", tmp_path_);
  if (!w.ok()) {
    ::close(fd);
    (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
    return w;
  }
  if (::close(fd) != 0) {
    Error e = sys_error("close", tmp_path_);
    (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
    return e;
  }
  if (::renameat(dir_fd_, kJournalTmpFile, dir_fd_, kJournalFile) != 0) {
    Error e = sys_error("rename", tmp_path_);
    (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
    return e;
  }
  // The snapshot is in place: the log's records up to its generation are
  // skipped from now on, and the records after it must follow it.
  generation_ = rec.generation;
  last_body_ = body;
  snapshot_bytes_ = bytes.size();
  ++writes_;
  ++snapshots_;
  // The rename is durable only once the directory is.
  if (fsync_) RESCTRLFS_RETURN_IF_ERROR(fsync_dir());
  // The snapshot holds every record of the log now. A crash before the
  // truncation leaves them behind, numbered up to the snapshot's
  // generation, and a restore skips them.
  RESCTRLFS_RETURN_IF_ERROR(truncate_log());
  need_snapshot_ = false;
  // Room for the next command; prepare() reports a failure to the command.
  Result<void> r = reserve_log();
  if (r.ok()) r = reserve_snapshot();
  if (!r.ok()) spdlog::debug("{}", r.error().message);
  return Ok();
}

Result<void> StateJournal::snapshot(const std::string& platform, fs::Filesystem& fs) {
  return commit(make_journal_body(platform, fs.take_state_snapshot_json(), applied_json()));
}

void StateJournal::set_request(uint64_t unique, int64_t result) {
  pending_unique_ = unique;
  pending_result_ = result;
}

void StateJournal::note_applied(uint64_t unique, int64_t result) {
  if (unique == 0) return;
  if (applied_.size() >= kAppliedKept) applied_.pop_front();
  applied_.emplace_back(unique, result);
}

std::optional<int64_t> StateJournal::applied(uint64_t unique) const {
  for (auto it = applied_.rbegin(); it != applied_.rend(); ++it)
    if (it->first == unique) return it->second;
  return std::nullopt;
}

std::string StateJournal::applied_json() const {
  if (applied_.empty()) return {};
  std::string out = "[";
  for (const auto& [u, r] : applied_) {
    if (out.size() > 1) out += ',';
    out += '[' + std::to_string(u) + ',' + std::to_string(r) + ']';
  }
  out += ']';
  return out;
}

Result<void> StateJournal::append(const std::string& delta) {
  RESCTRLFS_RETURN_IF_ERROR(open_log());
  const std::string bytes = encode_log_record(generation_ + 1, delta);
  if (map_ != nullptr) {
    // commit_state() made sure it fits. All but the first 8 bytes, then
    // those in one 8-byte store: a kill -9 stops the daemon between two
    // instructions, so the record is in the file whole, or without its
    // commit word (a torn tail, never acknowledged). The compiler may not
    // move the stores across the fence; the CPU retires them in order for
    // this thread, which is all a later reader of the file can see.
    char* at = map_ + log_bytes_;
    std::memcpy(at + kLogRecordAlign, bytes.data() + kLogRecordAlign,
                bytes.size() - kLogRecordAlign);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    uint64_t word;
    std::memcpy(&word, bytes.data(), sizeof(word));
    __atomic_store_n(reinterpret_cast<uint64_t*>(at), word, __ATOMIC_RELAXED);
  } else {
    Result<void> w = write_all(log_fd_, bytes, log_path_);
    if (w.ok() && fsync_ && !log_in_memory_ && ::fdatasync(log_fd_) != 0)
      w = sys_error("fdatasync", log_path_);
    if (!w.ok()) {
      // Take a part-written record back; the next commit is a snapshot
      // either way, and it truncates the log.
      (void)::ftruncate(log_fd_, static_cast<off_t>(log_bytes_));
      log_reserved_ = false;  // the truncation may have freed them
      return w;
    }
  }
  if (log_bytes_ == 0) log_since_ = std::chrono::steady_clock::now();
  log_bytes_ += bytes.size();
  ++generation_;
  ++writes_;
  return Ok();
}

Result<void> StateJournal::commit_state(const std::string& platform, fs::Filesystem& fs) {
  std::optional<std::string> delta = fs.take_state_delta_json();
  // The command's FUSE id goes with its effect (a command without one
  // changed nothing: running it again changes nothing either).
  const uint64_t unique = pending_unique_;
  const int64_t result = pending_result_;
  pending_unique_ = 0;
  if (delta && !delta->empty() && unique != 0) {
    note_applied(unique, result);
    delta->insert(1, "\"req\":[" + std::to_string(unique) + "," + std::to_string(result) + "],");
  } else if (!delta && unique != 0) {
    note_applied(unique, result);
  }
  if (need_snapshot_ || !delta || log_bytes_ >= kMaxLogBytes) return snapshot(platform, fs);
  if (delta->empty()) return Ok();
  // The log's room (a mapped log's file, a plain log's reservation) holds
  // one record of up to kMaxMappedRecordBytes past kMaxLogBytes; a larger
  // one goes into a snapshot.
  if (log_record_size(delta->size()) > kMaxMappedRecordBytes) return snapshot(platform, fs);
  Result<void> r = append(*delta);
  // The delta's marks are gone from fs/: without its record the log has a
  // hole, so only a snapshot can continue it.
  if (!r.ok()) need_snapshot_ = true;
  return r;
}

Result<void> StateJournal::compact(const std::string& platform, fs::Filesystem& fs) {
  if (!need_snapshot_ && log_bytes_ == 0) return Ok();
  return snapshot(platform, fs);
}

bool StateJournal::compaction_due(std::chrono::steady_clock::time_point now) const {
  // Why compacting less often loses nothing: a restore always applies the
  // whole log on top of the snapshot it follows, so the state it rebuilds
  // is the same whether the last acknowledged command sits in the snapshot
  // or in a record after it. Only the split between the two files changes,
  // which is what this policy chooses; the records' durability does not
  // depend on it (each is written before its command's reply).
  //
  // Why this split: a snapshot costs O(model) (and holds fs/'s model lock
  // while it serialises every group), a record O(its change). Waiting until
  // the log holds a fixed fraction of the snapshot's bytes spreads each
  // snapshot over at least that many bytes of records, so a busy daemon
  // pays O(1) per command for compaction, amortised, however many groups
  // there are; the restore then replays at most that fraction again. The
  // age bound gives an idle daemon a fresh snapshot soon after its last
  // burst; it is counted from the oldest record, not the last snapshot, so
  // the first command after a quiet spell is not followed at once by a
  // snapshot (a listing right after a move would wait for it). A trickle of
  // commands sparser than that fraction per kCompactAfter pays at most one
  // snapshot per kCompactAfter.
  if (need_snapshot_) return true;
  if (log_bytes_ == 0) return false;
  const uint64_t limit = std::min<uint64_t>(snapshot_bytes_, kMaxLogBytes) / kCompactLogFraction;
  if (log_bytes_ >= limit) return true;
  return now - log_since_ >= kCompactAfter;
}

Result<void> StateJournal::clear() {
  // The snapshot goes first: a log without one is never applied.
  if (::unlinkat(dir_fd_, kJournalFile, 0) != 0 && errno != ENOENT)
    return sys_error("unlink", path_);
  if (::unlinkat(dir_fd_, kJournalLogFile, 0) != 0 && errno != ENOENT)
    return sys_error("unlink", log_path_);
  unmap_log();
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = -1;
  log_bytes_ = 0;
  log_reserved_ = false;
  drop_spare();
  (void)::unlinkat(dir_fd_, kJournalTmpFile, 0);
  last_body_.reset();
  need_snapshot_ = true;
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
  const nlohmann::json fresh = parse_json(fs.save_state_json()).value_or(nlohmann::json());
  fs::MountOptions opts;
  if (fresh.is_object() && fresh.contains("options") && fresh["options"].is_object()) {
    const JsonIn o(fresh["options"], "options");
    for (const fs::MountOptionRow& r : fs::kMountOptions)
      opts.*(r.flag) = o.bool_or(r.name, false).value_or(false);
  }
  Result<std::optional<JournalRecord>> rec = j->load();
  if (!rec.ok()) {
    why = "corrupt: " + rec.error().message;
  } else if (!rec->has_value()) {
    // A log without its snapshot is what a crash during clear() leaves (the
    // snapshot goes first): the user had unmounted, nothing to restore.
    if (::unlinkat(j->dir_fd_, kJournalLogFile, 0) == 0) {
      spdlog::info("state journal {}: log without a snapshot (an unmount was interrupted), removed",
                   j->path());
    }
    spdlog::info("state journal {}: none, starting with a fresh tree", j->path());
    return j;
  } else {
    generation = (*rec)->generation;
    Result<JournalBody> body = parse_journal_body((*rec)->body);
    Result<std::vector<std::string>> log = j->load_log(generation);
    if (!body.ok()) {
      why = "corrupt: " + body.error().message;
    } else if (!log.ok()) {
      why = "corrupt: " + log.error().message;
    } else if (body->platform != platform) {
      why = "written for platform '" + body->platform + "', this daemon runs '" + platform + "'";
    } else {
      // The mount options are part of what the state means (CDP splits
      // the schemata): they must be the ones this daemon mounted with.
      const nlohmann::json saved = parse_json(body->fs_state).value_or(nlohmann::json());
      std::string state = body->fs_state;
      if (saved.is_object() && fresh.is_object() && saved.contains("options") &&
          fresh.contains("options") && saved["options"] != fresh["options"]) {
        why = "written with mount options " + saved["options"].dump() +
              ", this daemon mounted with " + fresh["options"].dump();
      } else if (!log->empty()) {
        for (const std::string& d : *log) {
          // A record's "req" (set_request); the replay ignores it.
          if (d.find("\"req\"") == std::string::npos) continue;
          const nlohmann::json rj = parse_json(d).value_or(nlohmann::json());
          std::pair<uint64_t, int64_t> pr;
          if (rj.is_object() && rj.contains("req") && applied_pair(rj["req"], pr))
            body->applied.push_back(pr);
        }
        fs::StateReplay replay;
        Result<void> r = replay.start(state);
        for (size_t i = 0; r.ok() && i < log->size(); ++i) {
          r = replay.apply((*log)[i]);
          if (!r.ok()) {
            why = "corrupt: log record " + std::to_string(generation + 1 + i) + ": " +
                  r.error().message;
          }
        }
        if (!r.ok() && why.empty()) why = "corrupt: " + r.error().message;
        if (r.ok()) {
          state = replay.finish();
          generation += log->size();
        }
      }
      if (why.empty()) {
        for (const auto& [u, r] : body->applied) j->note_applied(u, r);
        touched_fs = true;
        Result<void> r = fs.restore_state_json(state);
        if (!r.ok()) why = "cannot be restored: " + r.error().message;
      }
    }
  }
  if (why.empty()) {
    j->outcome_ = Outcome::kRestored;
    spdlog::info("state journal {}: restored generation {}", j->path(), generation);
    // A new snapshot at once: the log replayed into it, and threads that
    // died meanwhile dropped.
    j->need_snapshot_ = true;
    RESCTRLFS_RETURN_IF_ERROR(j->snapshot(platform, fs));
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
  const std::string aside_name = std::string(kJournalFile) + kJournalRejectedSuffix;
  if (::renameat(j->dir_fd_, kJournalFile, j->dir_fd_, aside_name.c_str()) != 0 && errno != ENOENT)
    return sys_error("rename", j->path());
  const std::string log_aside_name = std::string(kJournalLogFile) + kJournalRejectedSuffix;
  if (::renameat(j->dir_fd_, kJournalLogFile, j->dir_fd_, log_aside_name.c_str()) != 0 &&
      errno != ENOENT)
    return sys_error("rename", j->log_path_);
  (void)j->fsync_dir();
  j->generation_ = std::max(j->generation_, generation);
  j->last_body_.reset();
  j->need_snapshot_ = true;
  spdlog::error(
      "state journal {} (generation {}) is NOT restored, it is {}; moved to {}; starting "
      "with a fresh resctrl tree",
      j->path(), generation, why, aside);
  return j;
}

}  // namespace resctrlfs::daemon

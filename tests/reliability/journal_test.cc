// Tests of the state journal (daemon/journal.h): the record encoding
// detects every torn prefix and every flipped bit, commits are atomic and
// monotonic, a leftover temporary file is ignored, and start-up refuses a
// journal that is corrupt, foreign or unrestorable instead of applying
// part of it. The log: every torn prefix restores exactly the records it
// holds whole, every flipped bit anywhere refuses the journal, a gap in the
// sequence is refused, stale records after a compaction are skipped.
#include "daemon/journal.h"
#include "tests/temp_files.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <csignal>

#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/catch_skip.h"

namespace resctrlfs::daemon {
namespace {

namespace stdfs = std::filesystem;

// A temporary directory of this file's tests (tests/temp_files.h).
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("journal-test", true) {}
};

// A Filesystem that only records what the journal asks of it.
class StateOnlyFs final : public fs::Filesystem {
 public:
  std::string state = R"({"options":{"cdp":false},"groups":[]})";
  std::optional<std::string> restored;
  bool fail_restore = false;
  int mounts = 0, unmounts = 0;

  Result<void> mount(const fs::MountOptions&) override {
    ++mounts;
    return Ok();
  }
  void unmount() override { ++unmounts; }
  Result<fs::Attr> lookup(fs::Ino, std::string_view) override { return Error::make(ENOENT); }
  Result<fs::Attr> getattr(fs::Ino) override { return Error::make(ENOENT); }
  Result<std::vector<fs::DirEntry>> readdir(fs::Ino) override { return Error::make(ENOENT); }
  Result<fs::Attr> setattr(fs::Ino, const uint32_t*, const uid_t*, const gid_t*) override {
    return Error::make(ENOENT);
  }
  Result<fs::OpenFile> open(fs::Ino, int, const fs::Caller&) override {
    return Error::make(ENOENT);
  }
  Result<std::string> render(fs::Ino, const fs::Caller&) override { return Error::make(ENOENT); }
  Result<size_t> write(fs::Ino, std::string_view, const fs::Caller&) override {
    return Error::make(ENOENT);
  }
  Result<fs::Attr> create(fs::Ino, std::string_view) override { return Error::make(EACCES); }
  Result<void> unlink(fs::Ino, std::string_view) override { return Error::make(EPERM); }
  Result<fs::Attr> mkdir(fs::Ino, std::string_view, uint32_t, const fs::Caller&) override {
    return Error::make(ENOENT);
  }
  Result<void> rmdir(fs::Ino, std::string_view) override { return Error::make(ENOENT); }
  Result<void> rename(fs::Ino, std::string_view, fs::Ino, std::string_view, unsigned) override {
    return Error::make(ENOENT);
  }
  void forget(fs::Ino, uint64_t) override {}
  void tick(std::chrono::steady_clock::time_point) override {}
  void on_fork(pid_t, pid_t) override {}
  void on_exit(pid_t) override {}
  std::string status_json() override { return "{}"; }
  std::string save_state_json() override { return state; }
  // The next delta take_state_delta_json() reports (nullopt: ask for a
  // snapshot, as a Filesystem without deltas does).
  std::optional<std::string> next_delta;
  std::optional<std::string> take_state_delta_json() override {
    std::optional<std::string> d = std::move(next_delta);
    next_delta.reset();
    return d;
  }
  Result<void> restore_state_json(const std::string& json) override {
    if (fail_restore) return Error::make(EINVAL, "state: does not fit");
    restored = json;
    state = json;
    return Ok();
  }
};

TEST_CASE("crc32c matches the standard check value", "[journal]") {
  CHECK(crc32c("123456789") == 0xE3069283U);
  CHECK(crc32c("") == 0U);
  CHECK(crc32c_portable("123456789") == 0xE3069283U);
  // The SSE4.2 path (where the CPU has it) equals the table for every
  // length and alignment.
  std::string data;
  for (int i = 0; i < 300; ++i) data += static_cast<char>(i * 131 + 7);
  for (size_t off = 0; off < 9; ++off) {
    for (size_t len = 0; off + len <= data.size(); len += 7) {
      std::string_view v(data.data() + off, len);
      REQUIRE(crc32c(v) == crc32c_portable(v));
    }
  }
}

TEST_CASE("a record round-trips", "[journal]") {
  JournalRecord rec{42, R"({"platform":"intel-2s","fs":{"x":[1,2,3]}})"};
  std::string bytes = encode_journal_record(rec);
  Result<JournalRecord> back = decode_journal_record(bytes);
  REQUIRE(back.ok());
  CHECK(back->generation == 42);
  CHECK(back->body == rec.body);
}

TEST_CASE("a record's bytes are what nlohmann::json prints for its envelope", "[journal]") {
  // Snapshots written by earlier daemons and by this one are the same
  // bytes: the envelope's keys in order, the body's escapes as dump()'s.
  std::string every_ascii;
  for (int c = 0; c < 0x80; ++c) every_ascii += static_cast<char>(c);
  const std::string bodies[] = {
      "",
      R"({"platform":"intel-2s","fs":{"groups":[{"name":"a\"b","cpus":"0-3"}]}})",
      every_ascii,
      every_ascii + every_ascii,
      "\u00e9t\u00e9 \\ \"",
      "caf\xc3\xa9 \x01",  // UTF-8: printed by dump() itself
  };
  uint64_t generation = 1;
  for (const std::string& body : bodies) {
    generation *= 977;
    char crc[16];
    std::snprintf(crc, sizeof(crc), "%08x", crc32c(body));
    const nlohmann::json j = {
        {"format", "resctrlfs-state"}, {"version", 1},  {"generation", generation},
        {"length", body.size()},       {"crc32c", crc}, {"body", body}};
    const std::string bytes = encode_journal_record({generation, body});
    CHECK(bytes == j.dump() + "\n");
    Result<JournalRecord> back = decode_journal_record(bytes);
    REQUIRE(back.ok());
    CHECK(back->body == body);
  }
}

TEST_CASE("every torn prefix of a record is detected", "[journal]") {
  const std::string bytes = encode_journal_record({7, R"({"platform":"p","fs":{"a":1}})"});
  // The last byte is the newline after the object.
  for (size_t n = 0; n + 1 < bytes.size(); ++n) {
    Result<JournalRecord> r = decode_journal_record(std::string_view(bytes).substr(0, n));
    INFO("prefix of " << n << " bytes");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EBADMSG);
  }
  CHECK_FALSE(decode_journal_record(bytes + "x").ok());
}

TEST_CASE("every flipped bit of a record is detected", "[journal]") {
  const std::string bytes = encode_journal_record({3, R"({"platform":"p","fs":{"g":"abc"}})"});
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      Result<JournalRecord> r = decode_journal_record(bad);
      // A flip inside a decimal digit of the generation can give another
      // valid generation with an intact body; the body is what matters.
      if (r.ok()) {
        INFO("byte " << i << " bit " << bit);
        CHECK(r->body == decode_journal_record(bytes)->body);
      }
    }
  }
}

TEST_CASE("journal bodies name their platform", "[journal]") {
  std::string body = make_journal_body("amd-2s", R"({"groups":[]})");
  Result<JournalBody> b = parse_journal_body(body);
  REQUIRE(b.ok());
  CHECK(b->platform == "amd-2s");
  CHECK(b->fs_state == R"({"groups":[]})");
  CHECK_FALSE(parse_journal_body("[]").ok());
  CHECK_FALSE(parse_journal_body(R"({"platform":1,"fs":{}})").ok());
  CHECK_FALSE(parse_journal_body(R"({"platform":"p"})").ok());
}

TEST_CASE("commits are durable, monotonic and deduplicated", "[journal]") {
  TempDir dir;
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  auto loaded = (*j)->load();
  REQUIRE(loaded.ok());
  CHECK_FALSE(loaded->has_value());

  REQUIRE((*j)->commit("one").ok());
  CHECK((*j)->generation() == 1);
  REQUIRE((*j)->commit("one").ok());  // unchanged: not rewritten
  CHECK((*j)->generation() == 1);
  CHECK((*j)->writes() == 1);
  REQUIRE((*j)->commit("two").ok());
  CHECK((*j)->generation() == 2);
  // The temporary name holds the room allocated for the next snapshot
  // (see prepare()), not a snapshot.
  const std::string spare = test::read_file(dir.path + "/" + kJournalTmpFile);
  CHECK(spare.find_first_not_of('\0') == std::string::npos);

  // A new process continues the generations where the file left them.
  auto j2 = StateJournal::open(dir.path);
  REQUIRE(j2.ok());
  auto rec = (*j2)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->body == "two");
  CHECK((*rec)->generation == 2);
  REQUIRE((*j2)->commit("three").ok());
  CHECK((*j2)->generation() == 3);

  REQUIRE((*j2)->clear().ok());
  CHECK_FALSE(stdfs::exists((*j2)->path()));
  auto j3 = StateJournal::open(dir.path);
  REQUIRE(j3.ok());
  auto none = (*j3)->load();
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("without fsync a commit is still atomic and readable", "[journal]") {
  TempDir dir;
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  (*j)->set_fsync(false);
  REQUIRE((*j)->commit("a").ok());
  REQUIRE((*j)->commit("b").ok());
  auto again = StateJournal::open(dir.path);
  REQUIRE(again.ok());
  auto rec = (*again)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->body == "b");
  CHECK((*rec)->generation == 2);
}

TEST_CASE("a temporary file left by a crash is ignored and removed", "[journal]") {
  TempDir dir;
  {
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit("committed").ok());
  }
  // A crash between writing the temporary file and the rename.
  test::write_file(dir.path + "/" + kJournalTmpFile, "{\"format\":\"resctrlfs-state\",\"gen");
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  CHECK_FALSE(stdfs::exists(dir.path + "/" + kJournalTmpFile));
  auto rec = (*j)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->body == "committed");
}

TEST_CASE("the journal directory is created private", "[journal]") {
  TempDir dir;
  const std::string sub = dir.path + "/state";
  REQUIRE(StateJournal::open(sub).ok());
  CHECK((stdfs::status(sub).permissions() & stdfs::perms::all) == stdfs::perms::owner_all);
  CHECK_FALSE(StateJournal::open("").ok());
}

TEST_CASE("start-up restores a valid journal and commits at once", "[journal]") {
  TempDir dir;
  StateOnlyFs before;
  before.state = R"({"options":{"cdp":false},"groups":["g1"]})";
  {
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit_state("intel-2s", before).ok());
  }
  StateOnlyFs after;
  auto j = StateJournal::open_and_restore(dir.path, "intel-2s", after);
  REQUIRE(j.ok());
  REQUIRE(after.restored.has_value());
  CHECK(nlohmann::json::parse(*after.restored) == nlohmann::json::parse(before.state));
  CHECK((*j)->generation() <= 2);
}

TEST_CASE("start-up never applies part of a journal", "[journal]") {
  TempDir dir;
  StateOnlyFs saved;
  {
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    REQUIRE((*j)->commit_state("intel-2s", saved).ok());
  }
  const std::string path = dir.path + "/" + kJournalFile;
  const std::string aside = path + kJournalRejectedSuffix;
  const std::string good = test::read_file(path);
  StateOnlyFs fs;
  std::string platform = "intel-2s";
  std::string expect;

  SECTION("corrupt") {
    std::string bad = good;
    bad[bad.size() - 5] ^= 0x01;
    test::write_file(path, bad);
    expect = "corrupt";
  }
  SECTION("torn") {
    test::write_file(path, good.substr(0, good.size() / 2));
    expect = "torn";
  }
  SECTION("not ours") {
    test::write_file(path, "{not json");
    expect = "corrupt";
  }
  SECTION("another platform") {
    platform = "amd-2s";
    expect = "intel-2s";
  }
  SECTION("other mount options") {
    fs.state = R"({"options":{"cdp":true},"groups":[]})";
    expect = "mount options";
  }
  SECTION("restore fails") {
    fs.fail_restore = true;
    expect = "cannot be restored";
  }
  const std::string before = test::read_file(path);
  auto j = StateJournal::open_and_restore(dir.path, platform, fs);
  REQUIRE(j.ok());
  CHECK((*j)->outcome() == StateJournal::Outcome::kRejected);
  INFO((*j)->rejected_reason());
  CHECK((*j)->rejected_reason().find(expect) != std::string::npos);
  CHECK_FALSE(fs.restored.has_value());
  // A restore that failed half-way is undone by a fresh remount.
  CHECK(fs.unmounts == (fs.fail_restore ? 1 : 0));
  CHECK(fs.mounts == fs.unmounts);
  // Kept for inspection, out of the way of the next start.
  CHECK_FALSE(stdfs::exists(path));
  CHECK(test::read_file(aside) == before);
  // The next commit starts a valid journal again.
  REQUIRE((*j)->commit("fresh").ok());
  auto again = StateJournal::open(dir.path);
  REQUIRE(again.ok());
  auto rec = (*again)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->body == "fresh");
}

// Whether `path` is on tmpfs, where the journal maps its log.
bool on_tmpfs(const std::string& path) {
  struct statfs sfs;
  return ::statfs(path.c_str(), &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
}

// The mapped-log tests run only where the log is mapped; elsewhere they are
// skipped (tests/catch_skip.h), loudly, rather than pass.
#define SKIP_UNLESS_MAPPED(mapped, dir) \
  if (!(mapped)) RESCTRLFS_SKIP((dir) << " is not on tmpfs, so the log is not mapped")

// A snapshot and a log of three records, each moving one thread; `map`:
// the log appended through its mapping (on tmpfs) rather than write(2).
struct LoggedJournal {
  explicit LoggedJournal(bool map = false) {
    StateOnlyFs live;
    live.state = R"({"options":{"cdp":false},"groups":[],"threads":[]})";
    auto j = StateJournal::open(dir.path);
    REQUIRE(j.ok());
    (*j)->set_log_mapping(map);
    REQUIRE((*j)->commit_state("intel-2s", live).ok());  // snapshot, generation 1
    for (int i = 1; i <= 3; ++i) {
      live.next_delta = R"({"version":1,"threads":[[)" + std::to_string(100 + i) + ",1,1]]}";
      REQUIRE((*j)->commit_state("intel-2s", live).ok());
    }
    live.next_delta = "";  // nothing changed: nothing written
    REQUIRE((*j)->commit_state("intel-2s", live).ok());
    CHECK((*j)->generation() == 4);
    CHECK((*j)->snapshots() == 1);
    mapped = (*j)->log_mapped();
    CHECK(mapped == (map && on_tmpfs(dir.path)));
    snapshot = test::read_file(dir.path + "/" + kJournalFile);
    file = test::read_file(dir.path + "/" + kJournalLogFile);
    auto decoded = decode_log(file);
    REQUIRE(decoded.ok());
    REQUIRE(decoded->records.size() == 3);
    CHECK_FALSE(decoded->torn_tail);
    size_t end = 0;
    for (const JournalRecord& r : decoded->records) {
      end += log_record_size(r.body.size());
      CHECK(end % kLogRecordAlign == 0);
      ends.push_back(end);
    }
    CHECK(decoded->valid_bytes == end);
    CHECK((*j)->log_bytes() == end);
    // A mapped log is allocated whole and is zeros after its records.
    CHECK(file.size() == (mapped ? kMappedLogBytes : end));
    CHECK(file.find_first_not_of('\0', end) == std::string::npos);
    log = file.substr(0, end);
  }
  // Restores snapshot + `log_bytes`; the threads restored, or nullopt when refused.
  std::optional<size_t> restore(const std::string& log_bytes) {
    test::write_file(dir.path + "/" + kJournalFile, snapshot);
    test::write_file(dir.path + "/" + kJournalLogFile, log_bytes);
    stdfs::remove(dir.path + "/" + kJournalFile + kJournalRejectedSuffix);
    stdfs::remove(dir.path + "/" + kJournalLogFile + kJournalRejectedSuffix);
    StateOnlyFs fs;
    auto j = StateJournal::open_and_restore(dir.path, "intel-2s", fs);
    REQUIRE(j.ok());
    if ((*j)->outcome() == StateJournal::Outcome::kRejected) {
      CHECK_FALSE(fs.restored.has_value());
      CHECK(test::read_file(dir.path + "/" + kJournalLogFile + kJournalRejectedSuffix) ==
            log_bytes);
      return std::nullopt;
    }
    REQUIRE(fs.restored.has_value());
    nlohmann::json doc = nlohmann::json::parse(*fs.restored);
    // Restoring wrote a snapshot of it and emptied the log.
    auto after = decode_log(test::read_file(dir.path + "/" + kJournalLogFile));
    CHECK((after.ok() && after->records.empty()));
    size_t n = doc["threads"].size();
    for (size_t i = 0; i < n; ++i) CHECK(doc["threads"][i][0] == 101 + static_cast<int>(i));
    return n;
  }
  TempDir dir;
  bool mapped = false;
  std::string snapshot;
  std::string file;          // the log file as written
  std::string log;           // its records
  std::vector<size_t> ends;  // byte after each record
};

TEST_CASE("log records round-trip and carry their sequence", "[journal]") {
  const std::string rec = encode_log_record(42, "{\"x\":1}");
  // Padded to a multiple of 8 bytes with spaces before the final newline.
  CHECK(rec.size() == 64);
  CHECK(rec.substr(kLogHeaderBytes + 7) == std::string(7, ' ') + "\n");
  for (size_t n = 0; n < 20; ++n) {
    const std::string body(n, 'b');
    CHECK(encode_log_record(1, body).size() == log_record_size(n));
    CHECK(log_record_size(n) % kLogRecordAlign == 0);
    auto one = decode_log(encode_log_record(1, body));
    REQUIRE(one.ok());
    REQUIRE(one->records.size() == 1);
    CHECK(one->records[0].body == body);
  }
  auto d = decode_log(rec + encode_log_record(43, ""));
  REQUIRE(d.ok());
  REQUIRE(d->records.size() == 2);
  CHECK(d->records[0].generation == 42);
  CHECK(d->records[0].body == "{\"x\":1}");
  CHECK(d->records[1].body.empty());
  CHECK(d->valid_bytes == rec.size() + log_record_size(0));
}

TEST_CASE("every torn prefix of the log restores exactly its whole records", "[journal]") {
  LoggedJournal lj;
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  for (size_t n = 0; n <= lj.log.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    size_t whole = 0;
    while (whole < lj.ends.size() && lj.ends[whole] <= n) ++whole;
    std::optional<size_t> threads = lj.restore(lj.log.substr(0, n));
    REQUIRE(threads.has_value());
    CHECK(*threads == whole);
  }
  // A tail of zeros (a file extended before its data reached the disk).
  std::optional<size_t> zeros = lj.restore(lj.log + std::string(100, '\0'));
  spdlog::set_level(level);
  REQUIRE(zeros.has_value());
  CHECK(*zeros == 3);
}

TEST_CASE("every flipped bit of the log refuses the whole journal", "[journal]") {
  LoggedJournal lj;
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  for (size_t i = 0; i < lj.log.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = lj.log;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      CHECK_FALSE(decode_log(bad).ok());
      // The daemon's whole path on a sample (every bit would take long).
      if ((i * 8 + bit) % 13 == 0) CHECK_FALSE(lj.restore(bad).has_value());
    }
  }
  spdlog::set_level(level);
}

TEST_CASE("a mapped log restores whatever a kill -9 during an append leaves", "[journal]") {
  LoggedJournal lj(/*map=*/true);
  SKIP_UNLESS_MAPPED(lj.mapped, lj.dir.path);
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  // The file as the daemon left it: the records, then zeros.
  CHECK(lj.restore(lj.file) == 3u);
  // The third append stopped before its commit word: any part of the
  // record's other bytes may be in the file (the copy's order is the C
  // library's), the first 8 bytes are zeros. Its command was never
  // acknowledged; the first two are restored.
  const size_t start = lj.ends[1], end = lj.ends[2];
  for (size_t cut = start; cut <= end; ++cut) {
    INFO("third record written up to byte " << cut);
    std::string torn = lj.file;
    std::fill(torn.begin() + static_cast<long>(start), torn.begin() + static_cast<long>(end), '\0');
    // The bytes after the commit word up to `cut`, and separately the
    // bytes from `cut` to the record's end.
    std::string head = torn, tail = torn;
    for (size_t i = start + kLogRecordAlign; i < cut; ++i) head[i] = lj.file[i];
    for (size_t i = std::max(cut, start + kLogRecordAlign); i < end; ++i) tail[i] = lj.file[i];
    auto dh = decode_log(head);
    auto dt = decode_log(tail);
    REQUIRE(dh.ok());
    REQUIRE(dt.ok());
    CHECK(dh->records.size() == 2);
    CHECK(dt->records.size() == 2);
    if (cut % 16 == 0) {
      CHECK(lj.restore(head) == 2u);
      CHECK(lj.restore(tail) == 2u);
    }
  }
  // Anything beyond one record's reach after the last commit word is not
  // what an append leaves: refused.
  std::string far = lj.file;
  far[lj.ends[2] + kMaxMappedRecordBytes] = 'x';
  CHECK_FALSE(decode_log(far).ok());
  CHECK_FALSE(lj.restore(far).has_value());
  // A nonzero byte right after the last record, where the next commit word
  // would be, is a damaged record.
  std::string next = lj.file;
  next[lj.ends[2]] = 'R';
  CHECK_FALSE(decode_log(next).ok());
  spdlog::set_level(level);
}

TEST_CASE("a mapped log takes every bit flip in its records as damage", "[journal]") {
  LoggedJournal lj(/*map=*/true);
  SKIP_UNLESS_MAPPED(lj.mapped, lj.dir.path);
  for (size_t i = 0; i < lj.log.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = lj.file;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      CHECK_FALSE(decode_log(bad).ok());
    }
  }
}

TEST_CASE("a mapped log is re-made empty by a compaction and takes large changes as snapshots",
          "[journal]") {
  TempDir dir;
  SKIP_UNLESS_MAPPED(on_tmpfs(dir.path), dir.path);
  StateOnlyFs live;
  live.state = R"({"options":{"cdp":false},"groups":[],"threads":[]})";
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  REQUIRE((*j)->commit_state("intel-2s", live).ok());
  REQUIRE((*j)->log_mapped());
  const std::string small = R"({"version":1,"threads":[[101,1,1]]})";
  live.next_delta = small;
  REQUIRE((*j)->commit_state("intel-2s", live).ok());
  CHECK((*j)->snapshots() == 1);
  CHECK((*j)->log_bytes() == log_record_size(small.size()));
  // A change larger than a mapped record: a snapshot, and the log empty.
  std::string big = R"({"version":1,"threads":[)";
  for (int t = 0; t < 10000; ++t) big += (t ? ",[" : "[") + std::to_string(1000 + t) + ",1,1]";
  big += "]}";
  REQUIRE(log_record_size(big.size()) > kMaxMappedRecordBytes);
  live.next_delta = big;
  REQUIRE((*j)->commit_state("intel-2s", live).ok());
  CHECK((*j)->snapshots() == 2);
  CHECK((*j)->log_bytes() == 0);
  CHECK((*j)->log_mapped());
  // Records again after it, and a compaction empties the file's records.
  live.next_delta = R"({"version":1,"threads":[[102,1,1]]})";
  REQUIRE((*j)->commit_state("intel-2s", live).ok());
  auto d = decode_log(test::read_file(dir.path + "/" + kJournalLogFile));
  REQUIRE(d.ok());
  CHECK(d->records.size() == 1);
  REQUIRE((*j)->compact("intel-2s", live).ok());
  const std::string after = test::read_file(dir.path + "/" + kJournalLogFile);
  CHECK(after.size() == kMappedLogBytes);
  CHECK(after.find_first_not_of('\0') == std::string::npos);
  // Without the mapping the same log is plain appends.
  TempDir plain_dir;
  auto p = StateJournal::open(plain_dir.path);
  REQUIRE(p.ok());
  (*p)->set_log_mapping(false);
  REQUIRE((*p)->commit_state("intel-2s", live).ok());
  CHECK_FALSE((*p)->log_mapped());
  live.next_delta = small;
  REQUIRE((*p)->commit_state("intel-2s", live).ok());
  CHECK(test::read_file(plain_dir.path + "/" + kJournalLogFile).size() ==
        log_record_size(small.size()));
}

// A model document of about `bytes` bytes (StateOnlyFs's state).
std::string state_of_size(size_t bytes) {
  std::string s = R"({"options":{"cdp":false},"groups":[)";
  for (int g = 0; s.size() < bytes; ++g) s += (g ? ",\"g" : "\"g") + std::to_string(g) + "\"";
  return s + "]}";
}

// A delta whose record is `bytes` bytes or a little more.
std::string delta_of_size(size_t bytes) {
  std::string d = R"({"version":1,"threads":[)";
  for (int t = 0; log_record_size(d.size() + 2) < bytes; ++t)
    d += (t ? ",[" : "[") + std::to_string(1000 + t) + ",1,1]";
  return d + "]}";
}

// A journal of its own over a model document of about `state_bytes` bytes.
struct SizedJournal {
  explicit SizedJournal(size_t state_bytes) {
    live.state = state_of_size(state_bytes);
    auto opened = StateJournal::open(dir.path);
    REQUIRE(opened.ok());
    j = std::move(*opened);
  }
  // Commits the model's state: `delta` as one record, or (none) a snapshot.
  void commit(std::optional<std::string> delta = std::nullopt) {
    live.next_delta = delta;
    REQUIRE(j->commit_state("intel-2s", live).ok());
  }
  TempDir dir;
  StateOnlyFs live;
  std::unique_ptr<StateJournal> j;
};

TEST_CASE("the tick's compaction waits for the log to reach half the snapshot", "[journal]") {
  using Clock = std::chrono::steady_clock;
  SizedJournal sj(8000);
  StateJournal& j = *sj.j;
  // No snapshot yet: one is owed, whatever the log.
  CHECK(j.compaction_due(Clock::now()));
  sj.commit();
  const uint64_t snapshot = j.snapshot_bytes();
  CHECK(snapshot > 8000);
  CHECK_FALSE(j.compaction_due(Clock::now() + std::chrono::hours(1)));
  // Records of ~100 bytes: not due until they add up to half the snapshot.
  // `before` precedes every append, so the age bound cannot be what
  // decides here.
  const Clock::time_point before = Clock::now();
  const std::string delta = delta_of_size(100);
  int records = 0;
  while (j.log_bytes() + log_record_size(delta.size()) < snapshot / kCompactLogFraction) {
    sj.commit(delta);
    ++records;
    CHECK_FALSE(j.compaction_due(before));
  }
  CHECK(records > 30);
  sj.commit(delta);
  CHECK(j.compaction_due(before));
  // Deciding is not compacting: the log is still there until compact().
  CHECK(j.snapshots() == 1);
  REQUIRE(j.compact("intel-2s", sj.live).ok());
  CHECK(j.snapshots() == 2);
  CHECK(j.log_bytes() == 0);
  CHECK_FALSE(j.compaction_due(Clock::now() + std::chrono::hours(1)));
}

TEST_CASE("the tick's compaction comes once the log's oldest record is old enough", "[journal]") {
  using Clock = std::chrono::steady_clock;
  SizedJournal sj(8000);
  StateJournal& j = *sj.j;
  sj.commit();
  const Clock::time_point before_first = Clock::now();
  sj.commit(delta_of_size(100));
  const Clock::time_point after_first = Clock::now();
  // The first record is at most kCompactAfter old just short of
  // before_first + kCompactAfter, and at least that old from
  // after_first + kCompactAfter on.
  CHECK_FALSE(j.compaction_due(before_first + kCompactAfter - std::chrono::nanoseconds(1)));
  CHECK(j.compaction_due(after_first + kCompactAfter));
  // A later record does not make the log younger: its oldest record counts.
  sj.commit(delta_of_size(100));
  CHECK(j.compaction_due(after_first + kCompactAfter));
  REQUIRE(j.compact("intel-2s", sj.live).ok());
  // After the compaction the clock starts again with the next record.
  CHECK_FALSE(j.compaction_due(Clock::now() + std::chrono::hours(1)));
  const Clock::time_point before_next = Clock::now();
  sj.commit(delta_of_size(100));
  CHECK_FALSE(j.compaction_due(before_next + kCompactAfter - std::chrono::nanoseconds(1)));
  CHECK(j.compaction_due(Clock::now() + kCompactAfter));
}

TEST_CASE("with a snapshot past kMaxLogBytes the tick compacts before a command must",
          "[journal]") {
  using Clock = std::chrono::steady_clock;
  SizedJournal sj(kMaxLogBytes + 4096);
  StateJournal& j = *sj.j;
  sj.commit();
  REQUIRE(j.snapshot_bytes() > kMaxLogBytes);
  // Half of kMaxLogBytes, not half the snapshot: the tick's compaction
  // comes before commit_state() has to snapshot in a command's path.
  const Clock::time_point before = Clock::now();
  const std::string delta = delta_of_size(16 * 1024);
  while (j.log_bytes() + log_record_size(delta.size()) < kMaxLogBytes / kCompactLogFraction) {
    sj.commit(delta);
    CHECK_FALSE(j.compaction_due(before));
  }
  sj.commit(delta);
  CHECK(j.snapshots() == 1);
  CHECK(j.log_bytes() < kMaxLogBytes);
  CHECK(j.compaction_due(before));
}

TEST_CASE("the log's records must follow the snapshot without a gap", "[journal]") {
  LoggedJournal lj;
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  // Records 2 and 4 (3 lost): refused, not applied as far as 2.
  const std::string r2 = lj.log.substr(0, lj.ends[0]);
  const std::string r4 = lj.log.substr(lj.ends[1]);
  CHECK_FALSE(lj.restore(r2 + r4).has_value());
  // A log whose first record is not the one after the snapshot.
  CHECK_FALSE(lj.restore(r4).has_value());
  // Records up to the snapshot's generation are what a crash between a
  // compaction's rename and its truncation leaves: skipped.
  CHECK(lj.restore(encode_log_record(1, "{\"version\":1,\"threads\":[[999,1,1]]}") + lj.log) == 3u);
  // A record that is not a delta.
  CHECK_FALSE(lj.restore(encode_log_record(2, "{\"format\":1}")).has_value());
  spdlog::set_level(level);
}

TEST_CASE("a log without its snapshot is what an interrupted unmount leaves", "[journal]") {
  LoggedJournal lj;
  stdfs::remove(lj.dir.path + "/" + kJournalFile);
  StateOnlyFs fs;
  auto j = StateJournal::open_and_restore(lj.dir.path, "intel-2s", fs);
  REQUIRE(j.ok());
  CHECK((*j)->outcome() == StateJournal::Outcome::kNone);
  CHECK_FALSE(fs.restored.has_value());
  CHECK_FALSE(stdfs::exists(lj.dir.path + "/" + kJournalLogFile));
}

TEST_CASE("clear removes the snapshot and the log", "[journal]") {
  LoggedJournal lj;
  auto j = StateJournal::open(lj.dir.path);
  REQUIRE(j.ok());
  REQUIRE((*j)->clear().ok());
  CHECK_FALSE(stdfs::exists(lj.dir.path + "/" + kJournalFile));
  CHECK_FALSE(stdfs::exists(lj.dir.path + "/" + kJournalLogFile));
}

// Files of this process may not grow past `bytes` while it lives (the
// filesystem says EFBIG, as a full one says ENOSPC): the journal's
// failures without a small filesystem of its own.
struct FileSizeLimit {
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old;
    lim.rlim_cur = bytes;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
  }
  rlimit old{};
  void (*old_handler)(int) = nullptr;
};

TEST_CASE("prepare keeps room for the next snapshot and says when it cannot", "[journal]") {
  TempDir dir;
  StateOnlyFs live;
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  // The first snapshot, then a spare file as large as it and more.
  REQUIRE((*j)->prepare("intel-2s", live).ok());
  CHECK((*j)->snapshots() == 1);
  const std::string spare = dir.path + "/" + kJournalTmpFile;
  REQUIRE(stdfs::exists(spare));
  CHECK(stdfs::file_size(spare) >= (*j)->snapshot_bytes() + kMaxMappedRecordBytes);
  {
    FileSizeLimit limit(8192);
    // The snapshot goes into the spare; a new spare does not fit.
    live.state = R"({"options":{"cdp":false},"groups":["g"]})";
    REQUIRE((*j)->commit_state("intel-2s", live).ok());
    CHECK((*j)->snapshots() == 2);
    live.next_delta = std::string();  // nothing changed since
    auto p = (*j)->prepare("intel-2s", live);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == EFBIG);
    // Nothing was lost meanwhile: the journal holds the last commit.
    auto rec = (*j)->load();
    REQUIRE(rec.ok());
    REQUIRE(rec->has_value());
    CHECK((*rec)->generation == 2);
  }
  // Room again: prepare succeeds without a restart.
  live.next_delta = std::string();
  REQUIRE((*j)->prepare("intel-2s", live).ok());
  CHECK((*j)->snapshots() == 2);
  CHECK(stdfs::exists(spare));
}

TEST_CASE("a failed snapshot is owed until one is written", "[journal]") {
  TempDir dir;
  StateOnlyFs live;
  auto j = StateJournal::open(dir.path);
  REQUIRE(j.ok());
  REQUIRE((*j)->prepare("intel-2s", live).ok());
  live.next_delta = R"({"version":1,"threads":[[101,1,1]]})";
  REQUIRE((*j)->commit_state("intel-2s", live).ok());
  REQUIRE((*j)->log_bytes() > 0);
  {
    // A model the filesystem has no room for: the compaction fails, and
    // fs/ has handed over what changed with the document, so neither the
    // next commit nor prepare can go on with a record.
    FileSizeLimit limit(16384);
    live.state = state_of_size(40000);
    REQUIRE_FALSE((*j)->compact("intel-2s", live).ok());
    live.next_delta = R"({"version":1,"threads":[[102,1,1]]})";
    auto c = (*j)->commit_state("intel-2s", live);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == EFBIG);
    live.next_delta = std::string();
    REQUIRE_FALSE((*j)->prepare("intel-2s", live).ok());
    CHECK((*j)->snapshots() == 1);
  }
  // Room again: the owed snapshot holds the whole model.
  live.next_delta = std::string();
  REQUIRE((*j)->prepare("intel-2s", live).ok());
  CHECK((*j)->snapshots() == 2);
  CHECK((*j)->log_bytes() == 0);
  auto rec = (*j)->load();
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  auto body = parse_journal_body((*rec)->body);
  REQUIRE(body.ok());
  CHECK(nlohmann::json::parse(body->fs_state) == nlohmann::json::parse(live.state));
}

}  // namespace
}  // namespace resctrlfs::daemon

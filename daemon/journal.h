// Defines StateJournal, the durable record of the resctrl model that lets a
// restarted resctrlfsd (after a crash or kill -9) restore the tree and
// re-program the hardware, plus the record encoding it uses.
//
// Design: a snapshot plus an append-only log, so that a command costs
// O(size of its change), not O(size of the model).
//   <dir>/state.json  the snapshot: the whole model
//                     (fs::Filesystem::take_state_snapshot_json), replaced
//                     atomically (temp file, fsync, rename, directory fsync).
//   <dir>/state.log   records appended after it, one per committed command:
//                     the command's effect as a small delta
//                     (Filesystem::take_state_delta_json, fs/state_replay.h),
//                     appended with one write(2) and fdatasync'ed before the
//                     command's reply leaves the daemon.
// On tmpfs (the shipped /run/resctrlfs, where the page cache is the file
// and fdatasync does nothing) an empty log is allocated to kMappedLogBytes
// and mapped shared, and a record is appended with stores instead of a
// write(2): every byte but the first 8, then those 8 (its commit word) in
// one store. The file then ends in zeros, and a record cut short by a
// kill -9 has a zero commit word (see decode_log). Elsewhere each record is
// one write(2) and an fdatasync.
// Compaction writes a new snapshot, then truncates the log: on the daemon's
// 1 s tick when compaction_due() says so (the log has grown to a fraction of
// the snapshot, or its oldest record has waited kCompactAfter), at once
// when it exceeds kMaxLogBytes, and whenever fs/ cannot express a change as
// a delta (a mount, an info setting, a cpus write). Restore = the snapshot, then every
// log record after it, in order (fs::StateReplay), then
// restore_state_json() of the result: the same document a snapshot at the
// last acknowledged command would have held.
//
// Snapshot format: one JSON object (plain JSON to tools):
//   {"format": "resctrlfs-state", "version": 1,
//    "generation": N,          strictly increasing, starts at 1
//    "length": L,              bytes of body
//    "crc32c": "xxxxxxxx",     CRC-32C of body
//    "body": "<text>"}         {"platform": "<name>", "fs": <model document>}
// Log record format (text, one per line pair):
//   "RLOG <seq:16 hex> <len:8 hex> <body crc:8 hex> <header crc:8 hex>\n"
//   <body: len bytes> <0-7 spaces, to a multiple of 8 bytes> "\n"
// seq continues the snapshot's generation: the records after a snapshot of
// generation G are G+1, G+2, ...; records with seq <= G are left over from a
// crash between the snapshot's rename and the log's truncation and are
// skipped. The header CRC covers the header up to the body CRC, so a damaged
// length is found before it is believed.
//
// What is refused: a snapshot cut short or damaged (bad envelope, length,
// checksum), and in the log any damaged record (bad header, header or body
// checksum, terminator) or a gap in the sequence, wherever it is. The only
// damage accepted is a torn tail: the file ends inside the last record (a
// crash during its append, so its command was never acknowledged), or the
// last record of a mapped log lacks its commit word (nonzero bytes after it
// within kMaxMappedRecordBytes), or the file ends in zero bytes. A refused
// journal is never applied, not even in part: the daemon reports it loudly
// (error log), moves both files aside
// (".rejected") for inspection and starts with a fresh tree, as after the
// kernel's mount (see open_and_restore). Refusing to start was rejected:
// under systemd it turns one bad file into a daemon that never comes back.
//
// Threading: not synchronised; used from the daemon's event loop only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "fs/filesystem.h"

namespace resctrlfs::daemon {

inline constexpr const char* kJournalFile = "state.json";
inline constexpr const char* kJournalTmpFile = "state.json.tmp";
inline constexpr const char* kJournalLogFile = "state.log";
// The log is compacted into a new snapshot at once past this size.
inline constexpr size_t kMaxLogBytes = 1024 * 1024;
// The tick compacts once the log holds 1/kCompactLogFraction of the last
// snapshot's bytes (and never waits past 1/kCompactLogFraction of
// kMaxLogBytes, so that no command has to snapshot for it), or once its
// oldest record is kCompactAfter old (see compaction_due()).
inline constexpr size_t kCompactLogFraction = 2;
inline constexpr std::chrono::seconds kCompactAfter{4};
inline constexpr const char* kJournalRejectedSuffix = ".rejected";
// A journal larger than this is not read (a model with 100k threads is ~2 MB).
inline constexpr size_t kMaxJournalBytes = 64 * 1024 * 1024;

// CRC-32C (Castagnoli), as used by ext4 and iSCSI: with SSE4.2 where the
// CPU has it; crc32c_portable() is the table version, for tests.
uint32_t crc32c(std::string_view data);
uint32_t crc32c_portable(std::string_view data);

struct JournalRecord {
  uint64_t generation = 0;
  std::string body;
};

std::string encode_journal_record(const JournalRecord& rec);
// EBADMSG with a message naming what is wrong ("torn", "checksum", ...).
Result<JournalRecord> decode_journal_record(std::string_view bytes);

// Log records.
inline constexpr size_t kLogHeaderBytes = 49;
// Records are padded to a multiple of this (see encode_log_record).
inline constexpr size_t kLogRecordAlign = 8;
// Spaces between a record's body of `body_len` bytes and its final '\n'.
constexpr size_t log_record_padding(size_t body_len) {
  return (kLogRecordAlign - (kLogHeaderBytes + body_len + 1) % kLogRecordAlign) % kLogRecordAlign;
}
constexpr size_t log_record_size(size_t body_len) {
  return kLogHeaderBytes + body_len + log_record_padding(body_len) + 1;
}
// A mapped log (see StateJournal) takes records up to this size; a larger
// change is journaled as a snapshot. After the last committed record of a
// mapped log, nonzero bytes within this distance are a record whose append
// was cut short before its commit word; beyond it they are damage.
inline constexpr size_t kMaxMappedRecordBytes = 64 * 1024;
// The size of a mapped log file: room for kMaxLogBytes of records and one
// more record.
inline constexpr size_t kMappedLogBytes = kMaxLogBytes + kMaxMappedRecordBytes;
std::string encode_log_record(uint64_t seq, std::string_view body);
// The records of a log file, in order. `torn_tail`: bytes after the last
// complete record that are a cut-short record (or zeros), which are not
// records. EBADMSG for any other damage.
struct LogContents {
  std::vector<JournalRecord> records;
  size_t valid_bytes = 0;  // up to the end of the last complete record
  bool torn_tail = false;
};
Result<LogContents> decode_log(std::string_view bytes);

// The journal body: the platform name and the model document.
// `applied` (may be empty): the JSON list of the last commands' FUSE ids
// and results (StateJournal::applied), kept beside the model.
std::string make_journal_body(std::string_view platform, std::string_view fs_state,
                              std::string_view applied = {});
struct JournalBody {
  std::string platform;
  std::string fs_state;  // the model document, serialised
  // "applied": [[unique, result], ...] (StateJournal::applied), oldest first.
  std::vector<std::pair<uint64_t, int64_t>> applied;
};
Result<JournalBody> parse_journal_body(std::string_view body);

class StateJournal {
 public:
  ~StateJournal();
  StateJournal(const StateJournal&) = delete;
  StateJournal& operator=(const StateJournal&) = delete;

  // Opens the journal directory (created 0700 if missing) and removes a
  // temporary file a crash may have left. Does not read the journal. The
  // directory must be private (PrivateDir in private_dir.h: EPERM when
  // another uid owns it or group or others may write to it, or it is a
  // symlink); its files are then reached only through its descriptor and
  // never through a symlink.
  static Result<std::unique_ptr<StateJournal>> open(const std::string& dir);

  // Start-up: opens the journal in `dir` and, if it holds a state, restores
  // it onto `fs` (freshly mounted) with restore_state_json(),
  // which also re-programs the hardware and re-attaches the threads still
  // alive. Then commits the restored state at once (dead threads dropped).
  // A journal that is corrupt, belongs to another platform or mount
  // options, or cannot be applied is moved aside (kJournalRejectedSuffix)
  // with an error in the log, and `fs` is left (or put back, by unmount and
  // a mount with the options it had) in the fresh state: never half-applied. Fails only when the
  // directory or the fresh remount fails.
  static Result<std::unique_ptr<StateJournal>> open_and_restore(const std::string& dir,
                                                                const std::string& platform,
                                                                fs::Filesystem& fs);
  // What open_and_restore did, for the log and tests.
  enum class Outcome { kNone, kRestored, kRejected };
  Outcome outcome() const { return outcome_; }
  const std::string& rejected_reason() const { return rejected_reason_; }

  // Reads the snapshot. nullopt when there is none; EBADMSG when corrupt.
  // Later commits continue from its generation.
  Result<std::optional<JournalRecord>> load();

  // Makes `body` durable as a new snapshot of the next generation (temp
  // file, fsync, rename, directory fsync) and empties the log. A body equal
  // to the last snapshot, with an empty log, is not written again.
  Result<void> commit(const std::string& body);
  // Journals what changed in `fs` since the last commit: one log record
  // (appended, fdatasync'ed) when fs/ reports a delta, else a snapshot of
  // make_journal_body(platform, fs.take_state_snapshot_json()). Also a
  // snapshot when there is none yet, the log is past kMaxLogBytes or an
  // earlier commit failed (the log would have a hole).
  Result<void> commit_state(const std::string& platform, fs::Filesystem& fs);

  // Idempotent replay (docs/reliability.md): the next commit_state() is
  // that of the command the kernel sent with FUSE unique id `unique`
  // (without FUSE_UNIQUE_RESEND), which had `result` (bytes written, or
  // -errno): its record carries both ("req": [unique, result] in a log
  // record, "applied" in a snapshot), so that a daemon that takes the
  // connection over answers the kernel's resend of it with `result`
  // instead of running it again. The last kAppliedKept are kept.
  void set_request(uint64_t unique, int64_t result);
  // The result of command `unique` when this journal (or the one it
  // restored) holds it.
  std::optional<int64_t> applied(uint64_t unique) const;
  static constexpr size_t kAppliedKept = 256;
  // Before a command, so that the commit_state() after it cannot fail for
  // want of space: journals what changed since the last commit (fork and
  // exit events, what a failed command did part way), writes a snapshot
  // owed after an earlier failure or for a full log, and keeps room
  // allocated on the directory's filesystem for what the command's commit
  // may write: the log's kMappedLogBytes (a mapped log is allocated whole,
  // a plain one with fallocate(FALLOC_FL_KEEP_SIZE)) and a spare snapshot
  // file (kJournalTmpFile, allocated to the bytes of the last snapshot and
  // the log, plus a quarter, plus kMaxMappedRecordBytes) that the next
  // snapshot is written into. Returns the error of what failed (its errno as the system gave
  // it: ENOSPC, EDQUOT, EIO, EROFS, ...): the command must not run then.
  // Where the filesystem cannot allocate ahead (EOPNOTSUPP) nothing is
  // reserved, and only the commit itself can report a full filesystem.
  Result<void> prepare(const std::string& platform, fs::Filesystem& fs);
  // Compaction: a snapshot if the log holds records (or a snapshot is
  // owed). Unconditional; the tick asks compaction_due() first.
  Result<void> compact(const std::string& platform, fs::Filesystem& fs);
  // The tick's policy: whether compact() should run at `now` (steady
  // clock). True when a snapshot is owed, when the log holds
  // 1/kCompactLogFraction of the last snapshot's bytes (or of
  // kMaxLogBytes, whichever is less), or when it is not empty and its
  // oldest record was appended kCompactAfter or more before `now`.
  bool compaction_due(std::chrono::steady_clock::time_point now) const;

  // Removes the journal: the clean unmount resets resctrl, so nothing is
  // to be restored after it.
  Result<void> clear();

  // With fsync (the default) a commit survives a power loss or kernel
  // crash; without, it survives the daemon's crash or kill -9 (the page
  // cache keeps the appended record or renamed file) at a fraction of the
  // cost on a disk. After a reboot the hardware is reset and the threads are
  // gone anyway, so only the groups would be lost.
  void set_fsync(bool on) { fsync_ = on; }

  uint64_t generation() const { return generation_; }
  const std::string& path() const { return path_; }
  const std::string& log_path() const { return log_path_; }
  // Snapshots and log records written by this object (for tests and status).
  uint64_t writes() const { return writes_; }
  uint64_t snapshots() const { return snapshots_; }
  uint64_t log_bytes() const { return log_bytes_; }
  // Bytes of the last snapshot written (0 before the first).
  uint64_t snapshot_bytes() const { return snapshot_bytes_; }
  // Whether the log is appended through a shared mapping (on tmpfs).
  bool log_mapped() const { return map_ != nullptr; }
  // Appends with write(2) even on tmpfs (tests of the plain path).
  void set_log_mapping(bool on) { map_allowed_ = on; }

 private:
  StateJournal(std::string dir, int dir_fd);
  Result<void> fsync_dir();
  Result<void> open_log();
  Result<void> truncate_log();
  // The two reservations of prepare().
  Result<void> reserve_log();
  Result<void> reserve_snapshot();
  void drop_spare();
  void map_log();
  void unmap_log();
  Result<void> append(const std::string& delta);
  Result<void> snapshot(const std::string& platform, fs::Filesystem& fs);
  // Reads the log that follows a snapshot of generation `gen`: the bodies
  // of its live records, in order. EBADMSG when damaged or out of sequence.
  Result<std::vector<std::string>> load_log(uint64_t gen);

  std::string dir_;
  std::string path_;
  std::string tmp_path_;
  std::string log_path_;
  int dir_fd_ = -1;
  int log_fd_ = -1;
  uint64_t generation_ = 0;
  uint64_t writes_ = 0;
  uint64_t snapshots_ = 0;
  uint64_t log_bytes_ = 0;
  uint64_t snapshot_bytes_ = 0;
  // When the log's oldest record was appended (when it went from empty to
  // not empty; for a log found not empty when opened, when it was opened).
  std::chrono::steady_clock::time_point log_since_{};
  bool fsync_ = true;
  bool log_in_memory_ = false;  // the log is on tmpfs: fdatasync is a no-op
  // An empty log in memory is allocated to kMappedLogBytes and mapped; its
  // records are appended by stores (see append()).
  bool map_allowed_ = true;
  char* map_ = nullptr;
  // No snapshot on disk that the log can follow, or a record may be
  // missing from the log (a failed commit): the next commit is a snapshot.
  bool need_snapshot_ = true;
  // Room allocated ahead (see prepare()): the plain log's blocks past its
  // end, and the spare snapshot file with the bytes allocated to it.
  bool log_reserved_ = false;
  int spare_fd_ = -1;
  uint64_t spare_bytes_ = 0;
  bool reserve_supported_ = true;  // false once fallocate said EOPNOTSUPP
  std::optional<std::string> last_body_;
  // Commands journaled with their FUSE ids, oldest first (set_request).
  std::deque<std::pair<uint64_t, int64_t>> applied_;
  uint64_t pending_unique_ = 0;
  int64_t pending_result_ = 0;
  void note_applied(uint64_t unique, int64_t result);
  std::string applied_json() const;
  Outcome outcome_ = Outcome::kNone;
  std::string rejected_reason_;
};

}  // namespace resctrlfs::daemon

// Defines StateJournal, the durable record of the resctrl model that lets a
// restarted resctrlfsd (after a crash or kill -9) restore the tree and
// re-program the hardware, plus the record encoding it uses.
//
// Design: one snapshot file, replaced atomically. Every committed command
// writes the whole model (fs::Filesystem::save_state_json, a few KB) to
// `<dir>/state.journal.tmp`, fsyncs it, renames it over
// `<dir>/state.journal` and fsyncs the directory, before the command's
// reply leaves the daemon. The model is small and already serialised as a
// whole, so a snapshot costs the same as a log record, needs no compaction
// or replay, and the file on disk is always exactly one complete state:
// the old one or the new one, never a mix.
//
// Record format: one JSON object (so the file is plain JSON to tools):
//   {"format": "resctrlfs-state", "version": 1,
//    "generation": N,          strictly increasing, starts at 1
//    "length": L,              bytes of body
//    "crc32c": "xxxxxxxx",     CRC-32C of body
//    "body": "<text>"}         {"platform": "<name>", "fs": <model document>}
// A record that is cut short (torn: never a complete JSON object), has a
// bad envelope, a length or checksum mismatch is corrupt. A corrupt
// journal is never applied, not even in part: the daemon reports it loudly
// (error log), moves it aside to state.json.rejected for inspection and
// starts with a fresh tree, as after the kernel's mount (see
// open_and_restore). Refusing to start was rejected: under systemd it
// turns one bad file into a daemon that never comes back.
//
// Threading: not synchronised; used from the daemon's event loop only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "fs/filesystem.h"

namespace resctrlfs::daemon {

inline constexpr const char* kJournalFile = "state.json";
inline constexpr const char* kJournalTmpFile = "state.json.tmp";
inline constexpr const char* kJournalRejectedSuffix = ".rejected";
// A journal larger than this is not read (a model with 100k threads is ~2 MB).
inline constexpr size_t kMaxJournalBytes = 64 * 1024 * 1024;

// CRC-32C (Castagnoli), as used by ext4 and iSCSI.
uint32_t crc32c(std::string_view data);

struct JournalRecord {
  uint64_t generation = 0;
  std::string body;
};

std::string encode_journal_record(const JournalRecord& rec);
// EBADMSG with a message naming what is wrong ("torn", "checksum", ...).
Result<JournalRecord> decode_journal_record(std::string_view bytes);

// The journal body: the platform name and the model document.
std::string make_journal_body(std::string_view platform, std::string_view fs_state);
struct JournalBody {
  std::string platform;
  std::string fs_state;  // the model document, serialised
};
Result<JournalBody> parse_journal_body(std::string_view body);

class StateJournal {
 public:
  ~StateJournal();
  StateJournal(const StateJournal&) = delete;
  StateJournal& operator=(const StateJournal&) = delete;

  // Opens the journal directory (created 0700 if missing) and removes a
  // temporary file a crash may have left. Does not read the journal.
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

  // Reads the journal. nullopt when there is none; EBADMSG when corrupt.
  // Later commits continue from its generation.
  Result<std::optional<JournalRecord>> load();

  // Makes `body` durable as the next generation (temp file, fsync, rename,
  // directory fsync). A body equal to the last one committed or loaded is
  // not written again.
  Result<void> commit(const std::string& body);
  // commit(make_journal_body(platform, fs.save_state_json())).
  Result<void> commit_state(const std::string& platform, fs::Filesystem& fs);

  // Removes the journal: the clean unmount resets resctrl, so nothing is
  // to be restored after it.
  Result<void> clear();

  // With fsync (the default) a commit survives a power loss or kernel
  // crash; without, it survives the daemon's crash or kill -9 (the page
  // cache keeps the renamed file) at a fraction of the cost (ext4 here:
  // ~16 ms vs ~0.2 ms per command). After a reboot the hardware is reset
  // and the threads are gone anyway, so only the groups would be lost.
  void set_fsync(bool on) { fsync_ = on; }

  uint64_t generation() const { return generation_; }
  const std::string& path() const { return path_; }
  // Number of records written by this object (for tests and status).
  uint64_t writes() const { return writes_; }

 private:
  StateJournal(std::string dir, int dir_fd);
  Result<void> fsync_dir();

  std::string dir_;
  std::string path_;
  std::string tmp_path_;
  int dir_fd_ = -1;
  uint64_t generation_ = 0;
  uint64_t writes_ = 0;
  bool fsync_ = true;
  std::optional<std::string> last_body_;
  Outcome outcome_ = Outcome::kNone;
  std::string rejected_reason_;
};

}  // namespace resctrlfs::daemon

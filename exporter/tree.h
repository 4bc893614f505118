// Defines TreeReader: reads any resctrl tree (resctrlfs or the kernel's) into
// a Snapshot through held file descriptors.
//
// Each file is opened once and read again with pread at offset 0, which
// re-renders it (resctrlfs renders at offset 0, the kernel's seq_file does
// the same), so a pass costs one pread per file and no open/close. The
// directories that can change (the root, every mon_groups/, info/, the
// default group's mon_data/ and its domain directories) are listed on every
// pass; a file that is no longer listed is closed at the end of the pass,
// and a held file whose read fails (its group was removed, maybe re-created
// under the same name) is reopened once by path.
//
// The held descriptors are bounded: by default at most half of the soft
// RLIMIT_NOFILE (the rest is left for connections and everything else), so
// a tree with more files than that never runs the process out of
// descriptors. Files past the bound are read without being held (open,
// pread, close), so every file is still read on every pass. A file or
// directory that cannot be read is counted (Snapshot::read_errors) and
// logged with its path and errno, at most a few lines a minute.
//
// Files whose read resets info/last_cmd_status in the kernel
// (available_mbm_cntrs, io_alloc_cbm, mbm_L3_assignments, event_filter,
// mbm_assign_on_mkdir) are never read by default, so a scrape does not wipe
// the status a user is about to read; available_mbm_cntrs can be asked for.
// Not thread-safe: one caller at a time.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/log_rate_limit.h"
#include "base/result.h"
#include "exporter/snapshot.h"

namespace resctrlfs::exporter {

struct ReaderOptions {
  // Read info/L3_MON/available_mbm_cntrs when counters are in mbm_event
  // mode (each read resets last_cmd_status in the kernel).
  bool read_available_mbm_cntrs = false;
  // Descriptors held between passes at most (files and directories); 0:
  // half of the soft RLIMIT_NOFILE, looked up at every pass.
  size_t max_held_fds = 0;
  // Where log lines go (stderr when empty).
  std::function<void(const std::string&)> log;
};

class TreeReader {
 public:
  explicit TreeReader(std::string root, ReaderOptions opts = {});
  ~TreeReader();
  TreeReader(const TreeReader&) = delete;
  TreeReader& operator=(const TreeReader&) = delete;

  // One pass over the tree. Never throws; a tree that cannot be opened gives
  // a Snapshot with ok == false and the reason.
  Snapshot read();

  // The files held open after the last pass (paths relative to the root),
  // for the benchmark's raw pread sweep of the same files.
  std::vector<std::string> held_files() const;
  // Descriptors held now (files, directories and the root).
  size_t held_fds() const { return files_.size() + dirs_.size() + (root_fd_ >= 0 ? 1 : 0); }
  // The bound on held_fds() in force for the last pass.
  size_t fd_budget() const { return budget_; }
  const std::string& root() const { return root_; }

 private:
  struct Slot {
    int fd = -1;
    uint64_t gen = 0;
  };
  struct DirSlot {
    DIR* dir = nullptr;
    uint64_t gen = 0;
  };
  struct Entry {
    std::string name;
    bool dir = false;
    ino_t ino = 0;
  };

  bool ensure_root(std::string& error);
  void drop_all();
  // Sets budget_ and closes held descriptors past it.
  void apply_budget();
  bool can_hold() const { return held_fds() < budget_; }
  // Reads the whole file `rel` into `out`; 0 or an errno. A failure is
  // counted and logged, but ENOENT when `may_be_absent`.
  int read_file(const std::string& rel, std::string& out, bool may_be_absent = false);
  int read_file_once(const std::string& rel, std::string& out);
  int pread_all(int fd, std::string& out);
  // Lists directory `rel` (without . and ..); false when it cannot be read
  // (counted and logged).
  bool list_dir(const std::string& rel, std::vector<Entry>& out);
  bool list_dir_once(const std::string& rel, std::vector<Entry>& out);
  void failed(const std::string& rel, int err);
  void log(const std::string& line);
  void sweep();
  // Forgets the held files of a group whose directory is not the one seen
  // on the last pass (removed and made again under the same name): on a
  // filesystem that keeps serving a removed file through an open descriptor
  // the old descriptors would read the old group.
  void check_identity(const std::string& prefix, ino_t ino);

  void read_info(Snapshot& s);
  void read_group(Group& g, const std::string& prefix, bool ctrl);
  void read_mon(Group& g, const std::string& prefix, Snapshot& s);

  std::string root_;
  ReaderOptions opts_;
  int root_fd_ = -1;
  dev_t root_dev_ = 0;
  ino_t root_ino_ = 0;
  bool mount_mba_mbps_ = false;  // the root's mount options name mba_MBps
  uint64_t gen_ = 0;
  std::unordered_map<std::string, Slot> files_;
  std::unordered_map<std::string, DirSlot> dirs_;
  std::unordered_map<std::string, std::pair<ino_t, uint64_t>> group_ino_;  // prefix -> (ino, gen)
  std::string buf_;
  size_t budget_ = 0;
  Snapshot* pass_ = nullptr;  // the snapshot being read (for read_errors)
  LogRateLimit fail_log_{5, std::chrono::minutes(1)};
  LogRateLimit summary_log_{1, std::chrono::minutes(1)};

  // The default group's mon_data layout of this pass: each domain directory
  // (mon_L3_00, and under SNC mon_L3_00/mon_sub_L3_01) with its event files.
  struct MonDir {
    std::string rel;   // relative to mon_data/
    std::string name;  // the last component
    std::string resource;
    std::vector<std::string> events;
  };
  std::vector<MonDir> mon_dirs_;
};

// Parsers shared with the tests.
bool parse_dec(std::string_view s, uint64_t& v);
bool parse_hex(std::string_view s, uint64_t& v);
std::string_view trim(std::string_view s);
MonRead parse_mon_value(std::string_view text);
std::vector<SchemaLine> parse_schemata(std::string_view text);
// "0=SSEE;1=SSEE" or "0=3;1=f" (domain id -> text).
std::vector<std::pair<unsigned, std::string>> parse_domain_list(std::string_view text);
// True when /proc/self/mountinfo text `mountinfo` has a resctrl mount at
// `mount_point` whose options name `option` (octal escapes in the mount
// point are decoded).
bool mount_has_option(std::string_view mountinfo, std::string_view mount_point,
                      std::string_view option);
// The resource of a mon_data domain directory: mon_L3_00 -> L3,
// mon_sub_L3_01 -> L3, mon_PERF_PKG_00 -> PERF_PKG; "" when not one.
std::string mon_dir_resource(std::string_view name);

// Whether `root` is a mounted resctrl tree, which the exporter needs before
// it starts: a directory holding info/last_cmd_status and tasks (every
// resctrl mount has both, whatever its features) on a resctrl filesystem
// (statfs: the kernel's RDTGROUP_SUPER_MAGIC, or FUSE's, which resctrlfs
// reports outside its sandbox). An error names what is missing and says what
// to do.
Result<void> check_resctrl_root(const std::string& root);

}  // namespace resctrlfs::exporter

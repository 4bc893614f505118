// Defines the per-operation workloads of resctrlfs_bench: what "open + read
// to EOF + close of schemata", "mkdir + rmdir of a MON group", ... mean on
// each kind of target, and the spawned `cat` measured interleaved.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace resctrlfs::bench {

enum class Op {
  kOpenReadSchemata,
  kOpenReadMon,
  kPreadSchemata,
  kPreadMon,
  kStat,
  kWriteSchemata,
  kMkrmCtrl,
  kMkrmMon,
  kReaddir,
  kTasksWrite,
};

struct OpInfo {
  Op op;
  const char* key;    // JSON key
  const char* title;  // table row
};
const std::vector<OpInfo>& all_ops();

// Paths inside a resctrl-shaped tree that the operations use.
struct TreePaths {
  std::string schemata_line = "L3:0=ff\n";  // what the echo-style write writes
  std::string mon_file = "mon_data/mon_L3_00/mbm_total_bytes";
  std::string group = "bench_grp";  // CTRL_MON group made by prepare_tree
};

// Makes the operation body for `t`, or nullopt when the operation does not
// apply (for example mkdir on /proc). The body owns what it opens (held fds).
std::optional<OpFn> make_op(Op op, const Target& t, const TreePaths& paths);

// Creates the CTRL_MON group the readdir and tasks operations use. For a
// plain directory tree (tmpfs) the group's entries are copied by name from
// `template_dir` so that readdir lists the same number of entries.
bool prepare_tree(const Target& t, const TreePaths& paths, const std::string& template_dir,
                  std::string* error);
void cleanup_tree(const Target& t, const TreePaths& paths);

// `cat FILE` as a new process (posix_spawn + waitpid), the targets taking
// turns round by round so that drift on the machine hits all of them alike.
// Returns one Sample per target, in order; targets without a file get an error.
std::vector<Sample> time_cat_interleaved(const std::vector<const Target*>& targets,
                                         const TreePaths& paths, int rounds,
                                         std::optional<int> cpu);

// The file a target's read operations use ("" when it has none).
std::string read_path(const Target& t, const TreePaths& paths, bool mon);

std::vector<std::string> list_dir(const std::string& path);

}  // namespace resctrlfs::bench

// Defines what a part's .cc needs to write its rows of the file table next
// to its handlers, the way the kernel's res_common_files[] sits next to
// its show/write functions: FileRows (one part's rows, in directory
// order), the flag sets of the info directories and the kernel's checks
// before rdtgroup_mutex. A handler is a part's member (show_fn, write_fn,
// cond_fn in fs/parts.h) or, for a file only its row names, a function in
// the same .cc taking the parts (ShowFn): then a new file is one edit, its
// row and its handler in one place. file_table.cc puts the parts' rows in
// the order directories get them. Internal to fs/.
#pragma once

#include <span>
#include <string_view>

#include "fs/kstr.h"
#include "fs/parts.h"
#include "schemata/schemata.h"

namespace resctrlfs::fs::internal {

// One part's rows.
using FileRows = std::span<const FileRow>;

// The rows of info/<schema> for a cache, for a bandwidth resource, and of
// info/L3_MON.
inline constexpr uint32_t kInfoCache = kInfo | kCtrl | kResCache;
inline constexpr uint32_t kInfoMb = kInfo | kCtrl | kResMb;
inline constexpr uint32_t kInfoL3Mon = kInfo | kMon | kResCache;

// The kernel's checks before rdtgroup_mutex (see RefuseFn).
inline bool refuse_no_newline(std::string_view data) { return data.empty() || data.back() != '\n'; }
inline bool refuse_not_bool(std::string_view data) {
  bool v = false;
  return kstr::kstrtobool(kstr::c_string(data), v) != 0;
}
inline bool refuse_schemata(std::string_view data) { return schemata::rejected_before_lock(data); }

// The parts' rows, in the order file_table() puts them: rows of one
// directory keep the order they have here.
FileRows info_file_rows();        // info_files.cc: info/, info/<schema>
FileRows io_alloc_file_rows();    // io_alloc.cc: info/<cache>/io_alloc*
FileRows mon_info_file_rows();    // monitor_info.cc: info/L3_MON, event_configs/<event>
FileRows membership_file_rows();  // membership.cc: tasks, cpus, cpus_list
FileRows ctrl_file_rows();        // ctrl_files.cc: schemata, mode, size, mba_MBps_event
FileRows mon_group_file_rows();   // monitor.cc: mbm_L3_assignments
FileRows debug_file_rows();       // ctrl_files.cc: ctrl_hw_id, mon_hw_id (debug)
FileRows io_channel_file_rows();  // io_channels.cc: channels (ours)

}  // namespace resctrlfs::fs::internal

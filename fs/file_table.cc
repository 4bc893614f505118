// Defines the file table (every resctrl file as one row: name, mode, the
// flags a directory needs to get it, show, write, an optional presence
// condition) and last_cmd_status's buffer semantics.
#include <cstring>
#include <iterator>

#include "fs/io_channels.h"
#include "fs/kstr.h"
#include "fs/parts.h"
#include "schemata/schemata.h"

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

namespace {

// The kernel's checks before rdtgroup_mutex (see RefuseFn).
bool no_newline(std::string_view data) { return data.empty() || data.back() != '\n'; }
bool not_bool(std::string_view data) {
  bool v = false;
  return kstr::kstrtobool(kstr::c_string(data), v) != 0;
}
bool schemata_refused(std::string_view data) { return schemata::rejected_before_lock(data); }

constexpr uint32_t kCache = kInfo | kCtrl | kResCache;
constexpr uint32_t kMb = kInfo | kCtrl | kResMb;
constexpr uint32_t kL3Mon = kInfo | kMon | kResCache;
}  // namespace

// Builds the rows; each names the member function of the part that owns
// the file.
struct FileTableRows {
  // info/last_cmd_status and the files of info/<schema>.
  static void add_ctrl_info_rows(std::vector<FileRow>& rows) {
    static const FileRow kRows[] = {
        // info/
        {.name = "last_cmd_status",
         .mode = 0444,
         .flags = kInfo | kTop,
         .show = show_fn<&InfoFiles::show_last_cmd_status>},
        // info/<schema>
        {.name = "num_closids",
         .mode = 0444,
         .flags = kInfo | kCtrl,
         .show = show_fn<&InfoFiles::show_num_closids>},
        {.name = "cbm_mask",
         .mode = 0444,
         .flags = kCache,
         .show = show_fn<&InfoFiles::show_cbm_mask>},
        {.name = "min_cbm_bits",
         .mode = 0444,
         .flags = kCache,
         .show = show_fn<&InfoFiles::show_min_cbm_bits>},
        {.name = "shareable_bits",
         .mode = 0444,
         .flags = kCache,
         .show = show_fn<&InfoFiles::show_shareable_bits>},
        {.name = "bit_usage",
         .mode = 0444,
         .flags = kCache,
         .show = show_fn<&InfoFiles::show_bit_usage>},
        {.name = "sparse_masks",
         .mode = 0444,
         .flags = kCache,
         .show = show_fn<&InfoFiles::show_sparse_masks>},
        {.name = "io_alloc",
         .mode = 0644,
         .flags = kCache,
         .show = show_fn<&IoAlloc::show_io_alloc>,
         .write = write_fn<&IoAlloc::write_io_alloc>,
         .cond = cond_fn<&IoAlloc::cond_io_alloc>,
         .refuse_unlocked = not_bool},
        {.name = "io_alloc_cbm",
         .mode = 0644,
         .flags = kCache,
         .show = show_fn<&IoAlloc::show_io_alloc_cbm>,
         .write = write_fn<&IoAlloc::write_io_alloc_cbm>,
         .cond = cond_fn<&IoAlloc::cond_io_alloc>,
         .read_status = true,
         .refuse_unlocked = schemata_refused},
        {.name = "min_bandwidth",
         .mode = 0444,
         .flags = kMb,
         .show = show_fn<&InfoFiles::show_min_bandwidth>},
        {.name = "bandwidth_gran",
         .mode = 0444,
         .flags = kMb,
         .show = show_fn<&InfoFiles::show_bandwidth_gran>},
        {.name = "delay_linear",
         .mode = 0444,
         .flags = kMb,
         .show = show_fn<&InfoFiles::show_delay_linear>},
        {.name = "thread_throttle_mode",
         .mode = 0444,
         .flags = kMb,
         .show = show_fn<&InfoFiles::show_thread_throttle_mode>,
         .cond = cond_fn<&InfoFiles::cond_throttle_mode>},
    };
    rows.insert(rows.end(), std::begin(kRows), std::end(kRows));
  }

  // The files of info/<RES>_MON and its event_configs.
  static void add_mon_info_rows(std::vector<FileRow>& rows) {
    static const FileRow kRows[] = {
        // info/L3_MON
        {.name = "num_rmids",
         .mode = 0444,
         .flags = kInfo | kMon,
         .show = show_fn<&Monitor::show_num_rmids>},
        {.name = "mon_features",
         .mode = 0444,
         .flags = kInfo | kMon,
         .show = show_fn<&Monitor::show_mon_features>},
        {.name = "max_threshold_occupancy",
         .mode = 0644,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_max_threshold_occupancy>,
         .write = write_fn<&Monitor::write_max_threshold_occupancy>},
        {.name = "mbm_assign_mode",
         .mode = 0644,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_mbm_assign_mode>,
         .write = write_fn<&Monitor::write_mbm_assign_mode>,
         .refuse_unlocked = no_newline},
        {.name = "mbm_total_bytes_config",
         .mode = 0644,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_mbm_total_config>,
         .write = write_fn<&Monitor::write_mbm_total_config>,
         .cond = cond_fn<&Monitor::cond_bmec_total>},
        {.name = "mbm_local_bytes_config",
         .mode = 0644,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_mbm_local_config>,
         .write = write_fn<&Monitor::write_mbm_local_config>,
         .cond = cond_fn<&Monitor::cond_bmec_local>},
        {.name = "num_mbm_cntrs",
         .mode = 0444,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_num_mbm_cntrs>,
         .cond = cond_fn<&Monitor::cond_abmc>},
        {.name = "available_mbm_cntrs",
         .mode = 0444,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_available_mbm_cntrs>,
         .cond = cond_fn<&Monitor::cond_abmc>,
         .read_status = true},
        {.name = "mbm_assign_on_mkdir",
         .mode = 0644,
         .flags = kL3Mon,
         .show = show_fn<&Monitor::show_mbm_assign_on_mkdir>,
         .write = write_fn<&Monitor::write_mbm_assign_on_mkdir>,
         .cond = cond_fn<&Monitor::cond_abmc>,
         .read_status = true,
         .refuse_unlocked = not_bool},
        // info/L3_MON/event_configs/<event>
        {.name = "event_filter",
         .mode = 0444,
         .flags = kAssignConfig,
         .show = show_fn<&Monitor::show_event_filter>,
         .write = write_fn<&Monitor::write_event_filter>,
         .read_status = true,
         .refuse_unlocked = no_newline},
    };
    rows.insert(rows.end(), std::begin(kRows), std::end(kRows));
  }

  // The files of group directories.
  static void add_group_rows(std::vector<FileRow>& rows) {
    static const FileRow kRows[] = {
        // groups
        {.name = "tasks",
         .mode = 0644,
         .flags = kBase,
         .show = show_fn<&Groups::show_tasks>,
         .show_shared = show_shared_fn<&Groups::show_tasks_shared>,
         .write = write_fn<&Groups::write_tasks>,
         .read_status = true,
         .changes = Changes::kMarkedByHandler,
         .task_ids = true},
        {.name = "cpus",
         .mode = 0644,
         .flags = kBase,
         .show = show_fn<&CpuOwners::show_cpus>,
         .write = write_fn<&CpuOwners::write_cpus>,
         .read_status = true,
         .changes = Changes::kMarkedByHandler},
        {.name = "cpus_list",
         .mode = 0644,
         .flags = kBase,
         .show = show_fn<&CpuOwners::show_cpus_list>,
         .write = write_fn<&CpuOwners::write_cpus_list>,
         .read_status = true,
         .changes = Changes::kMarkedByHandler},
        {.name = "schemata",
         .mode = 0644,
         .flags = kBase | kCtrl,
         .show = show_fn<&CtrlFiles::show_schemata>,
         .write = write_fn<&CtrlFiles::write_schemata>,
         .read_status = true,
         .refuse_unlocked = schemata_refused,
         .changes = Changes::kGroup},
        {.name = "mode",
         .mode = 0644,
         .flags = kBase | kCtrl,
         .show = show_fn<&CtrlFiles::show_mode>,
         .write = write_fn<&CtrlFiles::write_mode>,
         .read_status = true,
         .changes = Changes::kGroup},
        {.name = "size",
         .mode = 0444,
         .flags = kBase | kCtrl,
         .show = show_fn<&CtrlFiles::show_size>,
         .read_status = true},
        {.name = "mba_MBps_event",
         .mode = 0644,
         .flags = kBase | kCtrl | kMon,
         .show = show_fn<&CtrlFiles::show_mba_mbps_event>,
         .write = write_fn<&CtrlFiles::write_mba_mbps_event>,
         .cond = cond_fn<&InfoFiles::cond_mba_sc>,
         .read_status = true,
         .refuse_unlocked = no_newline,
         .changes = Changes::kGroup},
        {.name = "mbm_L3_assignments",
         .mode = 0644,
         .flags = kBase | kMon,
         .show = show_fn<&Monitor::show_mbm_l3_assignments>,
         .write = write_fn<&Monitor::write_mbm_l3_assignments>,
         .cond = cond_fn<&Monitor::cond_abmc>,
         .read_status = true,
         .refuse_unlocked = no_newline,
         .changes = Changes::kGroup},
        {.name = "ctrl_hw_id",
         .mode = 0444,
         .flags = kBase | kCtrl | kDebug,
         .show = show_fn<&CtrlFiles::show_ctrl_hw_id>,
         .read_status = true},
        {.name = "mon_hw_id",
         .mode = 0444,
         .flags = kBase | kMon | kDebug,
         .show = show_fn<&CtrlFiles::show_mon_hw_id>,
         .read_status = true},
        // ours: Intel I/O RDT, with the iordt mount option
        {.name = "channels",
         .mode = 0644,
         .flags = kBase,
         .show = show_fn<&IoChannels::show_channels>,
         .write = write_fn<&IoChannels::write_channels>,
         .cond = cond_fn<&IoChannels::cond_iordt>,
         .read_status = true},
    };
    rows.insert(rows.end(), std::begin(kRows), std::end(kRows));
  }
};

const std::vector<FileRow>& file_table() {
  static const std::vector<FileRow> rows = [] {
    std::vector<FileRow> r;
    FileTableRows::add_ctrl_info_rows(r);
    FileTableRows::add_mon_info_rows(r);
    FileTableRows::add_group_rows(r);
    return r;
  }();
  return rows;
}

}  // namespace resctrlfs::fs::internal

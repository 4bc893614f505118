// Defines the file table (every resctrl file as one row: name, mode, the
// flags a directory needs to get it, show, write, an optional presence
// condition) and last_cmd_status's buffer semantics.
#include <cstring>

#include "fs/impl.h"

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

const std::vector<FileRow>& file_table() {
  using F = FsImpl;
  static const std::vector<FileRow> rows = {
      // info/
      {"last_cmd_status", 0444, kInfo | kTop, &F::show_last_cmd_status, nullptr, nullptr, false},
      // info/<schema>
      {"num_closids", 0444, kInfo | kCtrl, &F::show_num_closids, nullptr, nullptr, false},
      {"cbm_mask", 0444, kInfo | kCtrl | kResCache, &F::show_cbm_mask, nullptr, nullptr, false},
      {"min_cbm_bits", 0444, kInfo | kCtrl | kResCache, &F::show_min_cbm_bits, nullptr, nullptr,
       false},
      {"shareable_bits", 0444, kInfo | kCtrl | kResCache, &F::show_shareable_bits, nullptr, nullptr,
       false},
      {"bit_usage", 0444, kInfo | kCtrl | kResCache, &F::show_bit_usage, nullptr, nullptr, false},
      {"sparse_masks", 0444, kInfo | kCtrl | kResCache, &F::show_sparse_masks, nullptr, nullptr,
       false},
      {"io_alloc", 0644, kInfo | kCtrl | kResCache, &F::show_io_alloc, &F::write_io_alloc,
       &F::cond_io_alloc, false},
      {"io_alloc_cbm", 0644, kInfo | kCtrl | kResCache, &F::show_io_alloc_cbm,
       &F::write_io_alloc_cbm, &F::cond_io_alloc, false},
      {"min_bandwidth", 0444, kInfo | kCtrl | kResMb, &F::show_min_bandwidth, nullptr, nullptr,
       false},
      {"bandwidth_gran", 0444, kInfo | kCtrl | kResMb, &F::show_bandwidth_gran, nullptr, nullptr,
       false},
      {"delay_linear", 0444, kInfo | kCtrl | kResMb, &F::show_delay_linear, nullptr, nullptr,
       false},
      {"thread_throttle_mode", 0444, kInfo | kCtrl | kResMb, &F::show_thread_throttle_mode, nullptr,
       &F::cond_throttle_mode, false},
      // info/L3_MON
      {"num_rmids", 0444, kInfo | kMon, &F::show_num_rmids, nullptr, nullptr, false},
      {"mon_features", 0444, kInfo | kMon, &F::show_mon_features, nullptr, nullptr, false},
      {"max_threshold_occupancy", 0644, kInfo | kMon | kResCache, &F::show_max_threshold_occupancy,
       &F::write_max_threshold_occupancy, nullptr, false},
      {"mbm_assign_mode", 0644, kInfo | kMon | kResCache, &F::show_mbm_assign_mode,
       &F::write_mbm_assign_mode, nullptr, false},
      {"mbm_total_bytes_config", 0644, kInfo | kMon | kResCache, &F::show_mbm_total_config,
       &F::write_mbm_total_config, &F::cond_bmec_total, false},
      {"mbm_local_bytes_config", 0644, kInfo | kMon | kResCache, &F::show_mbm_local_config,
       &F::write_mbm_local_config, &F::cond_bmec_local, false},
      {"num_mbm_cntrs", 0444, kInfo | kMon | kResCache, &F::show_num_mbm_cntrs, nullptr,
       &F::cond_abmc, false},
      {"available_mbm_cntrs", 0444, kInfo | kMon | kResCache, &F::show_available_mbm_cntrs, nullptr,
       &F::cond_abmc, false},
      {"mbm_assign_on_mkdir", 0644, kInfo | kMon | kResCache, &F::show_mbm_assign_on_mkdir,
       &F::write_mbm_assign_on_mkdir, &F::cond_abmc, false},
      // info/L3_MON/event_configs/<event>
      {"event_filter", 0444, kAssignConfig, &F::show_event_filter, &F::write_event_filter, nullptr,
       false},
      // groups
      {"tasks", 0644, kBase, &F::show_tasks, &F::write_tasks, nullptr, true},
      {"cpus", 0644, kBase, &F::show_cpus, &F::write_cpus, nullptr, true},
      {"cpus_list", 0644, kBase, &F::show_cpus_list, &F::write_cpus_list, nullptr, true},
      {"schemata", 0644, kBase | kCtrl, &F::show_schemata, &F::write_schemata, nullptr, true},
      {"mode", 0644, kBase | kCtrl, &F::show_mode, &F::write_mode, nullptr, true},
      {"size", 0444, kBase | kCtrl, &F::show_size, nullptr, nullptr, true},
      {"mba_MBps_event", 0644, kBase | kCtrl | kMon, &F::show_mba_mbps_event,
       &F::write_mba_mbps_event, &F::cond_mba_sc, true},
      {"mbm_L3_assignments", 0644, kBase | kMon, &F::show_mbm_l3_assignments,
       &F::write_mbm_l3_assignments, &F::cond_abmc, true},
      {"ctrl_hw_id", 0444, kBase | kCtrl | kDebug, &F::show_ctrl_hw_id, nullptr, nullptr, true},
      {"mon_hw_id", 0444, kBase | kMon | kDebug, &F::show_mon_hw_id, nullptr, nullptr, true},
  };
  return rows;
}

}  // namespace resctrlfs::fs::internal

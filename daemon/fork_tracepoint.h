// Defines ForkTracepoint: the kernel tracepoint sched:sched_process_fork read
// through perf_event_open, one ring buffer per online CPU. Unlike the proc
// connector it fires in the context of the thread that called clone, so its
// parent_pid is that thread's id: a new thread inherits the group of the
// thread that created it, and a clone(CLONE_PARENT) child (runc's container
// init) the group of its cloner rather than of the parent it is given, as in
// the kernel's resctrl.
//
// The tracepoint's id and record layout come from tracefs at run time (the
// layout differs between kernels). Exits still come from the proc connector;
// merge_task_events() orders both sources by their timestamps (both
// CLOCK_MONOTONIC).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "daemon/proc_connector.h"

namespace resctrlfs::daemon {

// The CPUs of a kernel CPU list ("0-3,8,10-11\n", as in
// /sys/devices/system/cpu/online: base/cpulist.h's printed syntax, CPUs
// below 65536); empty when the text is not one.
std::vector<unsigned> parse_cpu_list(std::string_view text);

// Where parent_pid and child_pid sit in the tracepoint's raw record.
struct ForkTraceFormat {
  uint32_t parent_pid_offset = 0;
  uint32_t parent_pid_size = 0;
  uint32_t child_pid_offset = 0;
  uint32_t child_pid_size = 0;
};

// Parses the text of tracefs events/sched/sched_process_fork/format. Fails
// with EINVAL when either pid field is missing or not a 4- or 8-byte integer.
Result<ForkTraceFormat> parse_fork_format(std::string_view text);

// Decodes the raw tracepoint record (the PERF_SAMPLE_RAW payload). Returns
// false when the record is too short for the fields.
bool parse_fork_raw(const ForkTraceFormat& fmt, const void* data, size_t len, pid_t* parent_tid,
                    pid_t* child_tid);

// One record of a perf ring buffer opened with PERF_SAMPLE_TIME |
// PERF_SAMPLE_RAW, decoded.
struct PerfForkRecord {
  enum class Kind { kFork, kLost, kOther };
  Kind kind = Kind::kOther;
  ProcEvent event;    // kFork
  uint64_t lost = 0;  // kLost: records the kernel dropped
};
PerfForkRecord parse_perf_record(const ForkTraceFormat& fmt, const void* rec, size_t len);

// Walks the records of a perf data area of `size` bytes (a power of two)
// from `tail` to `head` (free-running positions), calling `on_record` with
// each whole record (records that wrap around the end are reassembled).
// Returns the new tail: `head`, or where a malformed header stopped the walk
// (everything up to `head` is then skipped).
uint64_t walk_perf_ring(const char* data, uint64_t size, uint64_t tail, uint64_t head,
                        const std::function<void(const char*, size_t)>& on_record);

// Merges the events of one drain: `traced` forks from the tracepoint and
// `connector` events from the proc connector, in the order they happened
// (by time; equal times keep traced before connector, each source's own
// order kept). A connector fork is dropped when the tracepoint reported the
// same child, as its parent is the process's, not the cloning thread; it is
// kept otherwise: the kernel creates some tasks (io_uring and vhost workers)
// without passing the tracepoint, and the connector's parent is then the
// best known.
std::vector<ProcEvent> merge_task_events(const std::vector<ProcEvent>& traced,
                                         const std::vector<ProcEvent>& connector);

class ForkTracepoint {
 public:
  // Finds tracefs (mounting it on a private temporary directory and
  // unmounting it again when it is not mounted), reads the tracepoint's id
  // and format, and opens one perf event per online CPU with its ring buffer.
  // Needs CAP_PERFMON or CAP_SYS_ADMIN (and CAP_SYS_ADMIN to mount tracefs).
  static Result<std::unique_ptr<ForkTracepoint>> open();
  ~ForkTracepoint();
  ForkTracepoint(const ForkTracepoint&) = delete;
  ForkTracepoint& operator=(const ForkTracepoint&) = delete;

  // One pollable descriptor per CPU: readable when its buffer has records.
  std::vector<int> fds() const;
  // Appends every record waiting in the buffers to `out` (in per-CPU order,
  // not merged) and returns how many were read; `lost` is increased by the
  // records the kernel dropped because a buffer was full.
  size_t drain(std::vector<ProcEvent>& out, uint64_t* lost);

 private:
  struct Ring {
    int fd = -1;
    void* base = nullptr;
    size_t map_len = 0;
  };
  ForkTracepoint() = default;
  ForkTraceFormat fmt_;
  size_t page_ = 4096;
  std::vector<Ring> rings_;
};

}  // namespace resctrlfs::daemon

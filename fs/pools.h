// Defines the two id pools of resctrl: the CLOSID pool of a mount (lowest
// free first, CLOSID 0 permanently the default group's) and the RMID pool
// with its LRU free list and per-domain limbo (a freed RMID stays busy until
// every monitoring domain has seen its occupancy drop below the threshold).
//
// Threading: not synchronised; the Filesystem's model lock covers them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "base/result.h"

namespace resctrlfs::fs {

class ClosidPool {
 public:
  // `count` usable CLOSIDs: 0 .. count-1; 0 is reserved.
  void init(unsigned count);
  unsigned size() const { return static_cast<unsigned>(allocated_.size()); }
  // Lowest free CLOSID, or ENOSPC (message left to the caller).
  Result<uint32_t> alloc();
  // Marks a specific CLOSID allocated (state restore). False if taken.
  bool claim(uint32_t closid);
  void free(uint32_t closid);
  bool allocated(uint32_t closid) const { return closid < allocated_.size() && allocated_[closid]; }
  unsigned free_count() const;

 private:
  std::vector<bool> allocated_;
};

class RmidPool {
 public:
  // RMIDs 1 .. num_rmids-1 start free in ascending order; 0 is the default
  // group's. `domains`: the monitoring domains a freed RMID must be clean
  // in. `use_limbo`: false when llc_occupancy is not enabled.
  void init(unsigned num_rmids, std::vector<int> domains, bool use_limbo);
  bool initialised() const { return num_rmids_ != 0; }
  unsigned num_rmids() const { return num_rmids_; }

  // Head of the free list; ENOSPC when nothing is free or in limbo, EBUSY
  // when the only candidates are in limbo.
  Result<uint32_t> alloc();
  // Takes a specific RMID off the free list, or out of limbo (state
  // restore: a journal names the RMID a group held). False if neither.
  bool claim(uint32_t rmid);
  // Replaces the free list and the limbo marks (a daemon taking over from an
  // unmounted one; the kernel keeps both across an unmount). Every RMID 1..num_rmids-1 must be
  // either free, once, or busy in at least one known domain; otherwise nothing changes and false is
  // returned.
  bool restore(const std::vector<uint32_t>& free_order,
               const std::map<int, std::set<uint32_t>>& busy);
  // Into limbo (busy in every domain) or, without limbo, to the tail.
  void free(uint32_t rmid);

  // One limbo pass over `domain`: `dirty(domain, rmid)` says whether the
  // RMID is still above the threshold there (or could not be read). Clean
  // RMIDs lose their busy mark; an RMID clean everywhere joins the tail of
  // the free list.
  void check_limbo(int domain, const std::function<bool(int, uint32_t)>& dirty);
  // Clears every busy mark of `domain` (the domain went away).
  void force_clear(int domain);
  // CPU hotplug: a monitoring domain appears (nothing is busy in it) or
  // goes away (its busy marks force-cleared, so RMIDs clean everywhere
  // else join the free list).
  void add_domain(int domain);
  void remove_domain(int domain);

  bool has_busy(int domain) const;
  unsigned limbo_count() const { return static_cast<unsigned>(busy_count_.size()); }
  const std::deque<uint32_t>& free_list() const { return free_; }
  // RMIDs busy in a domain (for status).
  std::vector<uint32_t> busy_in(int domain) const;
  const std::vector<int>& domains() const { return domains_; }
  // The free list and the non-empty limbo sets (domain -> ascending RMIDs)
  // the pool would hold after free() of each of `rmids` in turn, without
  // changing the pool or copying its sets.
  struct Released {
    std::vector<uint32_t> free;
    std::map<int, std::vector<uint32_t>> limbo;
  };
  Released after_freeing(const std::vector<uint32_t>& rmids) const;
  // Everything the pool holds, appended to `out` as numbers (sizes before
  // lists): two pools append the same numbers only if they are equal.
  void append_state(std::vector<uint32_t>& out) const;

 private:
  void unbusy(int domain, uint32_t rmid);

  unsigned num_rmids_ = 0;
  bool use_limbo_ = true;
  std::vector<int> domains_;
  std::deque<uint32_t> free_;
  std::map<int, std::set<uint32_t>> busy_;   // domain -> busy RMIDs
  std::map<uint32_t, unsigned> busy_count_;  // rmid -> domains still busy
};

}  // namespace resctrlfs::fs

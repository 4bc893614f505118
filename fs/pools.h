// Defines the two id pools of resctrl: the CLOSID pool of a mount (lowest
// free first, CLOSID 0 permanently the default group's) and the RMID pool
// with its LRU free list and per-domain limbo (a freed RMID stays busy until
// every monitoring domain has seen its occupancy drop below the threshold).
//
// The RMID pool holds RMID indexes (hw::Arch::rmid_idx_encode): on an
// architecture whose monitoring ids do not depend on the CLOSID an index is
// the RMID. Where they do (hw::PlatformInfo::rmid_depends_on_closid, the
// kernel's CONFIG_RESCTRL_RMID_DEPENDS_ON_CLOSID), each index belongs to
// one CLOSID: alloc() takes the first free index of the group's CLOSID, and
// the CLOSID pool hands out the free CLOSID with the fewest indexes in
// limbo (the kernel's resctrl_find_cleanest_closid), so that a new group
// finds clean monitoring ids.
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
  // The free CLOSID with the fewest `dirty` monitoring ids (the lowest of
  // those; the first with none), or ENOSPC: for monitoring ids that depend
  // on the CLOSID.
  Result<uint32_t> alloc_cleanest(const std::function<unsigned(uint32_t)>& dirty);
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
  // Which CLOSID an index belongs to, when indexes depend on it.
  using ClosidOf = std::function<uint32_t(uint32_t idx)>;
  // Indexes 0 .. num_rmids-1 but `reserved` (the default group's: its
  // CLOSID 0 / RMID 0) start free in ascending order. `domains`: the
  // monitoring domains a freed index must be clean in. `use_limbo`: false
  // when llc_occupancy is not enabled. `closid_of`: null unless indexes
  // depend on the CLOSID.
  void init(unsigned num_rmids, std::vector<int> domains, bool use_limbo, uint32_t reserved = 0,
            ClosidOf closid_of = nullptr);
  bool initialised() const { return num_rmids_ != 0; }
  unsigned num_rmids() const { return num_rmids_; }
  bool depends_on_closid() const { return static_cast<bool>(closid_of_); }

  // Head of the free list (with indexes that depend on the CLOSID: the
  // first free index of `closid`); EBUSY when nothing is free but some is
  // in limbo, else ENOSPC.
  Result<uint32_t> alloc(uint32_t closid = 0);
  // With indexes that depend on the CLOSID: how many of `closid`'s are in
  // limbo (the kernel's closid_num_dirty_rmid); 0 otherwise.
  unsigned dirty_count(uint32_t closid) const;
  // Takes a specific RMID off the free list, or out of limbo (state
  // restore: a journal names the RMID a group held). False if neither.
  bool claim(uint32_t rmid);
  // Replaces the free list and the limbo marks (a daemon taking over from an
  // unmounted one; the kernel keeps both across an unmount). Every index but the reserved one must
  // be either free, once, or busy in at least one known domain; otherwise nothing changes and false
  // is returned.
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
  uint32_t reserved_ = 0;
  ClosidOf closid_of_;
  std::vector<int> domains_;
  std::deque<uint32_t> free_;
  std::map<int, std::set<uint32_t>> busy_;   // domain -> busy RMIDs
  std::map<uint32_t, unsigned> busy_count_;  // rmid -> domains still busy
};

}  // namespace resctrlfs::fs

// Defines StateReplay, which rebuilds the model document of
// Filesystem::save_state_json() from a snapshot of it and the deltas
// Filesystem::take_state_delta_json() reported after it, for the daemon's
// append-only journal. It works on the documents only (no Filesystem): the
// result goes to restore_state_json() like a snapshot would.
//
// Delta format (version 1), every key optional:
//   {"version": 1,
//    "del": [["ctrl", "mon"], ...]   groups removed ("mon" "" for a CTRL_MON
//                                    group, which takes its MON groups along)
//    "set": [{"ctrl": "g", "mon": "", "group": {...}}, ...]
//                                    a group as save_state_json() writes it
//                                    (a CTRL_MON group without "mon_groups":
//                                    its MON groups are kept), appended when new
//    "threads": [[tid, closid, rmid] | [tid], ...]   new tags, or gone
//    "next_node_base": n}            the node-id counter (fs/node_table.h)
//                                    when it moved
// Removals apply before writes, so a group removed and made again in one
// delta comes back fresh. Group objects are copied whole, so fields other
// versions add survive a replay untouched.
//
// Threading: none; one replay per object.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace resctrlfs::fs {

class StateReplay {
 public:
  StateReplay();
  ~StateReplay();
  StateReplay(const StateReplay&) = delete;
  StateReplay& operator=(const StateReplay&) = delete;

  // The snapshot document. EINVAL when it is not one.
  Result<void> start(std::string_view snapshot);
  // One delta, in order. EINVAL when it is not a delta or does not fit the
  // document (a MON group without its parent); the replay is then useless.
  Result<void> apply(std::string_view delta);
  // The document with every delta applied.
  std::string finish();

 private:
  Result<void> start_checked(std::string_view snapshot);
  Result<void> apply_checked(std::string_view delta);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace resctrlfs::fs

// Defines NodeTable: the inodes of the tree, their lookup of children by
// name, and the reuse of released Node objects. Internal to fs/.
//
// Inode numbers are a function of the state, not of the order in which a
// daemon built its tree, so that a daemon that takes a mount over from a
// dead one (daemon/takeover.h) gives every file the number the kernel
// already holds: the number of a node is its group's node base (Group::
// node_base, journaled with the group; 0 for the default group and info/)
// in the top kBaseBits bits, and a hash of its path below the group's
// directory in the others. The root is kRootIno. Node bases are handed out
// by a counter the journal keeps (next_base), so a group made again under
// an old name gets new numbers, as the kernel's kernfs gives new inodes.
// Two paths of one group whose hashes agree are told apart by probing the
// next number, which depends on which came first; no two paths a group of
// a built-in platform can hold agree (reliability.test_takeover, NodeIds,
// enumerates them), elsewhere about n*n/2^37 for a group of n files. A
// path removed and made again in one group (a monitoring domain that went
// offline and came back, a mode's files) gets its old number back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fs/model.h"

namespace resctrlfs::fs::internal {

class NodeTable {
 public:
  // The root directory (inode kRootIno), owned by `uid`/`gid`.
  Node* make_root(uid_t uid, gid_t gid, int64_t now);
  Node* get(Ino ino) const;
  // `dir`'s entry `name`, or null.
  Node* child(const Node* dir, std::string_view name) const;
  // A new node under `parent`, which lends it its group, schema, domain and
  // event; `now` its times.
  // A group directory (kind kGroupDir) passes its group's `node_base`,
  // which starts a new numbering below it; other nodes number themselves
  // in their parent's group.
  Node* add(Node* parent, std::string name, NodeKind kind, uint32_t mode, uid_t uid, gid_t gid,
            int64_t now, std::optional<uint32_t> node_base = std::nullopt);
  // Marks `n` and its subtree removed, detaches it from its parent and
  // releases nodes nobody references. `inval` (may be null): told of the
  // entry's removal (the change was not named by the request).
  void remove(Node* n, InvalidationSink* inval);
  // Drops `ino` from the table, keeping its Node for reuse.
  void release(Ino ino);
  size_t size() const { return nodes_.size(); }

  static constexpr int kBaseBits = 28;
  static constexpr uint32_t kMaxBase = (1U << kBaseBits) - 1;
  // A node base for a new group: the counter's next value (it wraps past
  // kMaxBase to 1, skipping none: 268 million mkdirs on one journal).
  uint32_t take_base();
  // The counter after a restore: at least `next`.
  void note_next_base(uint32_t next);
  uint32_t next_base() const { return next_base_; }
  // Back to `next` (a failed restore undone).
  void set_next_base(uint32_t next) { next_base_ = next; }

 private:
  Ino number(const Node* parent, std::string_view name, std::optional<uint32_t> node_base,
             uint64_t& hash, uint32_t& base) const;
  std::unordered_map<Ino, std::unique_ptr<Node>> nodes_;
  uint32_t next_base_ = 1;
  // Nodes released by remove/forget, reused by add (with their name and
  // children capacity) instead of allocated again.
  std::vector<std::unique_ptr<Node>> spare_;
  // Removed nodes whose number a new node of the same path took (add).
  std::vector<std::unique_ptr<Node>> evicted_;
};

}  // namespace resctrlfs::fs::internal

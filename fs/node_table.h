// Defines NodeTable: the inodes of the tree (integer numbers, never reused
// within a daemon's life), their lookup of children by name, and the reuse
// of released Node objects. Internal to fs/.
#pragma once

#include <cstdint>
#include <memory>
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
  Node* add(Node* parent, std::string name, NodeKind kind, uint32_t mode, uid_t uid, gid_t gid,
            int64_t now);
  // Marks `n` and its subtree removed, detaches it from its parent and
  // releases nodes nobody references. `inval` (may be null): told of the
  // entry's removal (the change was not named by the request).
  void remove(Node* n, InvalidationSink* inval);
  // Drops `ino` from the table, keeping its Node for reuse.
  void release(Ino ino);
  size_t size() const { return nodes_.size(); }

 private:
  std::unordered_map<Ino, std::unique_ptr<Node>> nodes_;
  Ino next_ino_ = kRootIno + 1;
  // Nodes released by remove/forget, reused by add (with their name and
  // children capacity) instead of allocated again.
  std::vector<std::unique_ptr<Node>> spare_;
};

}  // namespace resctrlfs::fs::internal

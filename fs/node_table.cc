// Implements NodeTable (see node_table.h) and ChildMap.
#include "fs/node_table.h"

#include <algorithm>

namespace resctrlfs::fs::internal {

Node* NodeTable::make_root(uid_t uid, gid_t gid, int64_t now) {
  auto root = std::make_unique<Node>();
  root->ino = kRootIno;
  root->parent = kRootIno;
  root->kind = NodeKind::kGroupDir;
  root->mode = S_IFDIR | 0755;
  root->uid = uid;
  root->gid = gid;
  root->mtime = root->ctime = now;
  root->nlookup = 1;
  Node* raw = root.get();
  nodes_[kRootIno] = std::move(root);
  return raw;
}

Node* NodeTable::get(Ino ino) const {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.get();
}

Node* NodeTable::child(const Node* dir, std::string_view name) const {
  const Ino ino = dir->children.find(name);
  return ino == 0 ? nullptr : get(ino);
}

bool ChildMap::before(const Entry& e, std::string_view name) { return e.name < name; }

std::vector<ChildMap::Entry>::iterator ChildMap::lower(std::string_view name) {
  return std::lower_bound(v_.begin(), v_.end(), name, before);
}

Ino ChildMap::find(std::string_view name) const {
  auto it = std::lower_bound(v_.begin(), v_.end(), name, before);
  return it != v_.end() && it->name == name ? it->ino : 0;
}

void ChildMap::insert(std::string_view name, Ino ino, bool dir) {
  auto it = lower(name);
  if (it != v_.end() && it->name == name) {
    if (it->dir) --subdirs_;
    it->ino = ino;
    it->dir = dir;
  } else {
    it = v_.insert(it, Entry{std::string(name), ino, dir});
  }
  if (dir) ++subdirs_;
}

void ChildMap::erase(std::string_view name, Ino ino) {
  auto it = lower(name);
  if (it == v_.end() || it->name != name || (ino != 0 && it->ino != ino)) return;
  if (it->dir) --subdirs_;
  v_.erase(it);
}

void ChildMap::clear() {
  v_.clear();
  subdirs_ = 0;
}

Node* NodeTable::add(Node* parent, std::string name, NodeKind kind, uint32_t mode, uid_t uid,
                     gid_t gid, int64_t now) {
  std::unique_ptr<Node> n;
  if (spare_.empty()) {
    n = std::make_unique<Node>();
  } else {
    // A reused node starts as a new one, keeping only its (empty)
    // children's memory.
    n = std::move(spare_.back());
    spare_.pop_back();
    ChildMap kept;
    kept.swap(n->children);
    kept.clear();
    *n = Node{};
    n->children.swap(kept);
  }
  n->ino = next_ino_++;
  n->parent = parent->ino;
  n->name = std::move(name);
  n->kind = kind;
  n->mode = mode;
  n->uid = uid;
  n->gid = gid;
  n->mtime = n->ctime = now;
  n->group = parent->group;
  n->schema = parent->schema;
  n->domain = parent->domain;
  n->mon_sum = parent->mon_sum;
  n->mon_rid = parent->mon_rid;
  n->event = parent->event;
  Node* raw = n.get();
  parent->children.insert(raw->name, raw->ino, raw->is_dir());
  nodes_[raw->ino] = std::move(n);
  return raw;
}

void NodeTable::release(Ino ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  // A bound on what is kept: a few thousand groups' worth of files.
  if (spare_.size() < 65536) spare_.push_back(std::move(it->second));
  nodes_.erase(it);
}

void NodeTable::remove(Node* n, InvalidationSink* inval) {
  // Children first, so that their inodes can be released bottom-up. They
  // are taken out of `n` first: each removal unlinks itself from its parent.
  ChildMap kids;
  kids.swap(n->children);
  for (const ChildMap::Entry& k : kids) {
    if (Node* c = get(k.ino)) remove(c, nullptr);
  }
  kids.clear();
  n->children.swap(kids);  // empty, with its memory
  if (Node* p = get(n->parent); p != nullptr && p != n) {
    p->children.erase(n->name, n->ino);
    if (inval != nullptr) inval->inval_entry(p->ino, n->name);
  }
  n->removed = true;
  n->group = nullptr;
  if (n->nlookup == 0 && n->ino != kRootIno) release(n->ino);
}

}  // namespace resctrlfs::fs::internal

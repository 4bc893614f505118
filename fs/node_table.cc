// Implements NodeTable (see node_table.h) and ChildMap.
#include "fs/node_table.h"

#include <algorithm>

namespace resctrlfs::fs::internal {

namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr int kHashBits = 64 - NodeTable::kBaseBits;
constexpr uint64_t kHashMask = (uint64_t{1} << kHashBits) - 1;

// FNV-1a of "<parent's path>/<name>", continued from the parent's.
uint64_t hash_child(uint64_t parent, std::string_view name) {
  uint64_t h = parent;
  h = (h ^ uint64_t{'/'}) * kFnvPrime;
  for (unsigned char c : name) h = (h ^ c) * kFnvPrime;
  return h;
}

}  // namespace

uint32_t NodeTable::take_base() {
  const uint32_t b = next_base_;
  next_base_ = b >= kMaxBase ? 1 : b + 1;
  return b;
}

void NodeTable::note_next_base(uint32_t next) {
  if (next > next_base_ && next <= kMaxBase) next_base_ = next;
}

Ino NodeTable::number(const Node* parent, std::string_view name, std::optional<uint32_t> node_base,
                      uint64_t& hash, uint32_t& base) const {
  if (node_base) {
    base = *node_base;
    hash = kFnvOffset;
  } else {
    base = parent->node_base;
    hash = hash_child(parent->path_hash, name);
  }
  uint64_t low = hash & kHashMask;
  // 0 and kRootIno belong to no file; the default group's directory is
  // the root, numbered apart.
  if (base == 0 && low <= kRootIno) low += 2;
  // A live node of another path with the same number: the next free one.
  for (;;) {
    const Ino ino = (uint64_t{base} << kHashBits) | low;
    if (ino != 0 && ino != kRootIno) {
      const Node* other = get(ino);
      if (other == nullptr || other->removed) return ino;
    }
    low = (low + 1) & kHashMask;
  }
}

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
  root->path_hash = kFnvOffset;
  root->node_base = 0;
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
                     gid_t gid, int64_t now, std::optional<uint32_t> node_base) {
  uint64_t hash = 0;
  uint32_t base = 0;
  const Ino ino = number(parent, name, node_base, hash, base);
  // The same path made again: the removed node the kernel may still hold
  // gives its number up (it is not in any listing any more).
  // Kept, not reused: a command waiting on the hardware may still point
  // at it (FsImpl::forget's deferred release).
  if (auto it = nodes_.find(ino); it != nodes_.end()) {
    if (evicted_.size() >= 1024) evicted_.erase(evicted_.begin());
    evicted_.push_back(std::move(it->second));
    nodes_.erase(it);
  }
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
  n->ino = ino;
  n->path_hash = hash;
  n->node_base = base;
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

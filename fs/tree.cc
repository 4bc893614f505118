// Implements the node table of FsImpl and the VFS-facing operations that do
// not change groups: lookup, getattr, readdir, setattr, open, write
// dispatch, create/unlink refusals, forget, and building the directory
// trees of groups and info/ from the file table.
#include <fcntl.h>

#include <cerrno>
#include <ctime>

#include "fs/impl.h"

namespace resctrlfs::fs::internal {

namespace {

constexpr size_t kNameMax = 255;
constexpr size_t kWriteMax = 4096;  // kernfs atomic_write_len (one page)

bool row_matches(const FileRow& row, uint32_t flags) {
  return row.flags != 0 && (row.flags & ~flags) == 0;
}

}  // namespace

int64_t FsImpl::now_seconds() const { return static_cast<int64_t>(std::time(nullptr)); }

Node* FsImpl::node(Ino ino) {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.get();
}

Node* FsImpl::child(Node* dir, std::string_view name) {
  const Ino ino = dir->children.find(name);
  return ino == 0 ? nullptr : node(ino);
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

Node* FsImpl::add_node(Node* parent, std::string name, NodeKind kind, uint32_t mode, uid_t uid,
                       gid_t gid) {
  std::unique_ptr<Node> n;
  if (spare_nodes_.empty()) {
    n = std::make_unique<Node>();
  } else {
    // A reused node starts as a new one, keeping only its (empty)
    // children's memory.
    n = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
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
  n->mtime = n->ctime = now_seconds();
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

void FsImpl::release_node(Ino ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  // A bound on what is kept: a few thousand groups' worth of files.
  if (spare_nodes_.size() < 65536) spare_nodes_.push_back(std::move(it->second));
  nodes_.erase(it);
}

void FsImpl::remove_node(Node* n, bool notify) {
  // Children first, so that their inodes can be released bottom-up. They
  // are taken out of `n` first: each removal unlinks itself from its parent.
  ChildMap kids;
  kids.swap(n->children);
  for (const ChildMap::Entry& k : kids) {
    if (Node* c = node(k.ino)) remove_node(c, false);
  }
  kids.clear();
  n->children.swap(kids);  // empty, with its memory
  if (Node* p = node(n->parent); p != nullptr && p != n) {
    p->children.erase(n->name, n->ino);
    if (notify && inval_ != nullptr) inval_->inval_entry(p->ino, n->name);
  }
  n->removed = true;
  n->group = nullptr;
  if (n->nlookup == 0 && n->ino != kRootIno) release_node(n->ino);
}

void FsImpl::add_file_rows(Node* dir, uint32_t flags, uid_t uid, gid_t gid) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    if (row.cond != nullptr && !(this->*row.cond)()) continue;
    Node* f = add_node(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, uid, gid);
    f->row = &row;
  }
}

void FsImpl::sync_file_rows(Node* dir, uint32_t flags) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    bool want = row.cond == nullptr || (this->*row.cond)();
    Node* f = child(dir, row.name);
    if (want && f == nullptr) {
      Node* nf = add_node(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, dir->uid, dir->gid);
      nf->row = &row;
      if (inval_ != nullptr) inval_->inval_entry(dir->ino, row.name);
    } else if (!want && f != nullptr) {
      remove_node(f, true);
    }
  }
}

uint32_t FsImpl::group_flags(const Group& g) const {
  uint32_t f = kBase;
  if (g.type == GroupType::kCtrlMon) f |= kCtrl;
  if (mon_capable()) f |= kMon;
  if (opts_.debug) f |= kDebug;
  return f;
}

void FsImpl::build_group_dir(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid) {
  dir->group = g;
  g->dir = dir->ino;
  add_file_rows(dir, group_flags(*g), uid, gid);
  if (mon_capable()) {
    if (g->type == GroupType::kCtrlMon) {
      Node* mg = add_node(dir, "mon_groups", NodeKind::kMonGroups, S_IFDIR | dir_mode, uid, gid);
      g->mon_groups_dir = mg->ino;
    }
    build_mon_data(g, dir, dir_mode, uid, gid);
  }
}

void FsImpl::build_mon_data(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid) {
  Node* md = add_node(dir, "mon_data", NodeKind::kMonData, S_IFDIR | dir_mode, uid, gid);
  for (const hw::MonDomain& d : info_.mon.mon_domains) build_mon_domain(md, d.id);
  for (const hw::MonDomain& d : info_.perf_pkg.mon_domains) build_perf_pkg_domain(md, d.id);
}

Node* FsImpl::build_perf_pkg_domain(Node* md, int package_id) {
  // Telemetry: one directory per package, the enabled events in event-id order.
  char name[32];
  std::snprintf(name, sizeof(name), "mon_PERF_PKG_%02d", package_id);
  Node* dd = add_node(md, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid);
  dd->domain = package_id;
  dd->mon_rid = hw::ResourceId::PERF_PKG;
  for (const hw::PerfPkgEvent& ev : info_.perf_pkg.events) {
    Node* f =
        add_node(dd, event_name(ev.id), NodeKind::kEventFile, S_IFREG | 0444, md->uid, md->gid);
    f->event = ev.id;
  }
  return dd;
}

Node* FsImpl::build_mon_domain(Node* md, int domain_id) {
  auto add_events = [&](Node* dd) {
    for (hw::EventId ev : info_.mon.events) {
      Node* f =
          add_node(dd, event_name(ev), NodeKind::kEventFile, S_IFREG | 0444, md->uid, md->gid);
      f->event = ev;
    }
  };
  // Under SNC the domain is a NUMA node: its directory goes below the one of
  // the L3 cache it shares, created with the cache's first node (§1.5).
  const bool snc = info_.mon.snc_ways > 1;
  int l3_id = domain_id;
  if (snc) {
    for (const hw::MonDomain& d : info_.mon.mon_domains)
      if (d.id == domain_id) l3_id = d.l3_id;
  }
  char name[32];
  std::snprintf(name, sizeof(name), "mon_L3_%02d", l3_id);
  Node* dd = child(md, name);
  Node* created = nullptr;
  if (dd == nullptr) {
    dd = add_node(md, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid);
    // With SNC this directory stands for the whole L3: its files sum the
    // node domains below it.
    dd->domain = l3_id;
    dd->mon_sum = snc;
    add_events(dd);
    created = dd;
  }
  if (!snc) return dd;
  std::snprintf(name, sizeof(name), "mon_sub_L3_%02d", domain_id);
  Node* sub = add_node(dd, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid);
  sub->domain = domain_id;
  sub->mon_sum = false;
  add_events(sub);
  return created != nullptr ? created : sub;
}

void FsImpl::build_info_tree() {
  const uint32_t dbg = opts_.debug ? uint32_t{kDebug} : 0U;
  Node* info =
      add_node(root_node_, "info", NodeKind::kInfo, S_IFDIR | 0755, mount_uid_, mount_gid_);
  info->group = nullptr;
  info_ino_ = info->ino;
  add_file_rows(info, kInfo | kTop | dbg, mount_uid_, mount_gid_);
  for (size_t i = 0; i < schemas_.schemas.size(); ++i) {
    const schemata::Schema& s = schemas_.schemas[i];
    Node* d = add_node(info, s.name, NodeKind::kInfoRes, S_IFDIR | 0755, mount_uid_, mount_gid_);
    d->schema = static_cast<int>(i);
    uint32_t flags = kInfo | kCtrl | dbg | (s.kind == schemata::Kind::CACHE ? kResCache : kResMb);
    add_file_rows(d, flags, mount_uid_, mount_gid_);
  }
  if (info_.perf_pkg.capable) {
    Node* m =
        add_node(info, "PERF_PKG_MON", NodeKind::kInfoMon, S_IFDIR | 0755, mount_uid_, mount_gid_);
    m->mon_rid = hw::ResourceId::PERF_PKG;
    add_file_rows(m, kInfo | kMon | kResPerfPkg | dbg, mount_uid_, mount_gid_);
  }
  if (info_.mon.capable) {
    Node* m = add_node(info, "L3_MON", NodeKind::kInfoMon, S_IFDIR | 0755, mount_uid_, mount_gid_);
    info_mon_ino_ = m->ino;
    add_file_rows(m, kInfo | kMon | kResCache | dbg, mount_uid_, mount_gid_);
    if (info_.mon.abmc) {
      Node* ec = add_node(m, "event_configs", NodeKind::kEventConfigs, S_IFDIR | 0755, mount_uid_,
                          mount_gid_);
      for (hw::EventId ev : info_.mon.events) {
        if (!is_mbm(ev)) continue;
        Node* e = add_node(ec, event_name(ev), NodeKind::kEventConfig, S_IFDIR | 0755, mount_uid_,
                           mount_gid_);
        e->event = ev;
        add_file_rows(e, kAssignConfig | dbg, mount_uid_, mount_gid_);
        // event_filter is registered 0444 and made 0644 where the counters'
        // transactions can be configured, as Linux's
        // resctrl_l3_mon_resource_init() (fs/resctrl/monitor.c) does from the
        // arch's mbm_cntr_configurable; event_filter_write() refuses otherwise.
        if (info_.mon.mbm_cntr_configurable) {
          if (Node* f = child(e, "event_filter")) f->mode |= 0200;
        }
      }
    }
  }
}

Group* FsImpl::group_of(const Node& n) const {
  switch (n.kind) {
    case NodeKind::kInfo:
    case NodeKind::kInfoRes:
    case NodeKind::kInfoMon:
    case NodeKind::kEventConfigs:
    case NodeKind::kEventConfig:
      return nullptr;
    default:
      return n.group;
  }
}

Attr FsImpl::attr_of(const Node& n) const {
  Attr a;
  a.ino = n.ino;
  a.mode = n.mode;
  a.uid = n.uid;
  a.gid = n.gid;
  a.size = 0;
  a.mtime = n.mtime;
  a.ctime = n.ctime;
  if (n.is_dir()) {
    a.nlink = 2 + n.children.subdirs();
  } else {
    a.nlink = 1;
  }
  return a;
}

Result<Attr> FsImpl::lookup(Ino parent, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* p = node(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  if (!p->is_dir()) return Error::make(ENOTDIR);
  if (name.size() > kNameMax) return Error::make(ENAMETOOLONG);
  Node* c = child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  ++c->nlookup;
  return attr_of(*c);
}

Result<Attr> FsImpl::getattr(Ino ino) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr) return Error::make(ENOENT);
  return attr_of(*n);
}

Result<std::vector<DirEntry>> FsImpl::readdir(Ino ino) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (!n->is_dir()) return Error::make(ENOTDIR);
  std::vector<DirEntry> out;
  out.reserve(n->children.size());
  for (const ChildMap::Entry& e : n->children) {
    Node* c = node(e.ino);
    if (c != nullptr) out.push_back(DirEntry{e.name, attr_of(*c)});
  }
  return out;
}

Result<Attr> FsImpl::setattr(Ino ino, const uint32_t* mode, const uid_t* uid, const gid_t* gid) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (mode != nullptr) n->mode = (n->mode & S_IFMT) | (*mode & 07777);
  if (uid != nullptr) n->uid = *uid;
  if (gid != nullptr) n->gid = *gid;
  n->ctime = now_seconds();
  // Only group directories' owners and modes are saved.
  if (n->kind == NodeKind::kGroupDir && n->group != nullptr) {
    jr_group(n->group);
  } else {
    jr_all();
  }
  return attr_of(*n);
}

Result<OpenFile> FsImpl::open(Ino ino, int flags, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->is_dir()) return Error::make(EISDIR);
  const int acc = flags & O_ACCMODE;
  OpenFile of;
  of.ino = ino;
  of.writable = acc == O_WRONLY || acc == O_RDWR;
  of.readable = acc == O_RDONLY || acc == O_RDWR;
  // kernfs's extra open permission check: no write bit or no write
  // operation -> EACCES, even for root; same for reads.
  const bool has_write = n->kind == NodeKind::kFile;
  if (of.writable && ((n->mode & 0222) == 0 || !has_write)) return Error::make(EACCES);
  if (of.readable && (n->mode & 0444) == 0) return Error::make(EACCES);
  return of;
}

Result<std::string> FsImpl::render_node(const Node& n) {
  if (n.kind == NodeKind::kEventFile) {
    lcs_.clear();  // the group lock clears last_cmd_status (tip)
    return show_event_file(n);
  }
  if (n.row->group_file) lcs_.clear();
  return (this->*(n.row->show))(n);
}

Result<std::string> FsImpl::render(Ino ino, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->is_dir()) return Error::make(EISDIR);
  return render_node(*n);
}

Result<size_t> FsImpl::write(Ino ino, std::string_view data, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->kind != NodeKind::kFile) return Error::make(EINVAL);
  if (data.size() > kWriteMax) return Error::make(E2BIG);
  if (n->row->write == nullptr) return Error::make(EINVAL);
  Result<void> r = (this->*(n->row->write))(*n, data, caller);
  // A failed write may have done part of its work (tasks lists): marked too.
  jr_after_write(*n);
  if (!r.ok()) return std::move(r).error();
  n->mtime = now_seconds();
  return data.size();
}

Result<Attr> FsImpl::create(Ino parent, std::string_view name) { return Error::make(EACCES); }

Result<void> FsImpl::unlink(Ino parent, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* p = node(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  Node* c = child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  if (c->is_dir()) return Error::make(EISDIR);
  return Error::make(EPERM);
}

void FsImpl::forget(Ino ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = node(ino);
  if (n == nullptr || ino == kRootIno) return;
  n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
  if (n->nlookup == 0 && n->removed) release_node(ino);
}

}  // namespace resctrlfs::fs::internal

// Implements the VFS-facing operations of FsImpl that do not change groups: lookup, getattr,
// readdir, setattr, open, write dispatch, create/unlink refusals, forget, and building the
// directory trees of groups and info/ from the file table.
#include <fcntl.h>

#include <cerrno>
#include <ctime>

#include "fs/events.h"
#include "fs/impl.h"

namespace resctrlfs::fs::internal {

namespace {

constexpr size_t kNameMax = 255;

bool row_matches(const FileRow& row, uint32_t flags) {
  return row.flags != 0 && (row.flags & ~flags) == 0;
}

}  // namespace

int64_t FsImpl::now_seconds() const { return static_cast<int64_t>(std::time(nullptr)); }

void FsImpl::add_file_rows(Node* dir, uint32_t flags, uid_t uid, gid_t gid) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    if (row.cond != nullptr && !(this->*row.cond)()) continue;
    Node* f =
        nodes_.add(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, uid, gid, now_seconds());
    f->row = &row;
  }
}

void FsImpl::sync_file_rows(Node* dir, uint32_t flags) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    bool want = row.cond == nullptr || (this->*row.cond)();
    Node* f = nodes_.child(dir, row.name);
    if (want && f == nullptr) {
      Node* nf = nodes_.add(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, dir->uid, dir->gid,
                            now_seconds());
      nf->row = &row;
      if (inval_ != nullptr) inval_->inval_entry(dir->ino, row.name);
    } else if (!want && f != nullptr) {
      nodes_.remove(f, inval_);
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
      Node* mg = nodes_.add(dir, "mon_groups", NodeKind::kMonGroups, S_IFDIR | dir_mode, uid, gid,
                            now_seconds());
      g->mon_groups_dir = mg->ino;
    }
    build_mon_data(g, dir, dir_mode, uid, gid);
  }
}

void FsImpl::build_mon_data(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid) {
  Node* md =
      nodes_.add(dir, "mon_data", NodeKind::kMonData, S_IFDIR | dir_mode, uid, gid, now_seconds());
  for (const hw::MonDomain& d : info_.mon.mon_domains) build_mon_domain(md, d.id);
  for (const hw::MonDomain& d : info_.perf_pkg.mon_domains) build_perf_pkg_domain(md, d.id);
}

Node* FsImpl::build_perf_pkg_domain(Node* md, int package_id) {
  // Telemetry: one directory per package, the enabled events in event-id order.
  char name[32];
  std::snprintf(name, sizeof(name), "mon_PERF_PKG_%02d", package_id);
  Node* dd = nodes_.add(md, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid, now_seconds());
  dd->domain = package_id;
  dd->mon_rid = hw::ResourceId::PERF_PKG;
  for (const hw::PerfPkgEvent& ev : info_.perf_pkg.events) {
    Node* f = nodes_.add(dd, event_name(ev.id), NodeKind::kEventFile, S_IFREG | 0444, md->uid,
                         md->gid, now_seconds());
    f->event = ev.id;
  }
  return dd;
}

Node* FsImpl::build_mon_domain(Node* md, int domain_id) {
  auto add_events = [&](Node* dd) {
    for (hw::EventId ev : info_.mon.events) {
      Node* f = nodes_.add(dd, event_name(ev), NodeKind::kEventFile, S_IFREG | 0444, md->uid,
                           md->gid, now_seconds());
      f->event = ev;
    }
  };
  // Under SNC the domain is a NUMA node: its directory goes below the one of
  // the L3 cache it shares, created with the cache's first node.
  const bool snc = info_.mon.snc_ways > 1;
  int l3_id = domain_id;
  if (snc) {
    for (const hw::MonDomain& d : info_.mon.mon_domains)
      if (d.id == domain_id) l3_id = d.l3_id;
  }
  char name[32];
  std::snprintf(name, sizeof(name), "mon_L3_%02d", l3_id);
  Node* dd = nodes_.child(md, name);
  Node* created = nullptr;
  if (dd == nullptr) {
    dd = nodes_.add(md, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid, now_seconds());
    // With SNC this directory stands for the whole L3: its files sum the
    // node domains below it.
    dd->domain = l3_id;
    dd->mon_sum = snc;
    add_events(dd);
    created = dd;
  }
  if (!snc) return dd;
  std::snprintf(name, sizeof(name), "mon_sub_L3_%02d", domain_id);
  Node* sub = nodes_.add(dd, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid, now_seconds());
  sub->domain = domain_id;
  sub->mon_sum = false;
  add_events(sub);
  return created != nullptr ? created : sub;
}

void FsImpl::build_info_tree() {
  const uint32_t dbg = opts_.debug ? uint32_t{kDebug} : 0U;
  Node* info = nodes_.add(root_node_, "info", NodeKind::kInfo, S_IFDIR | 0755, mount_uid_,
                          mount_gid_, now_seconds());
  info->group = nullptr;
  info_ino_ = info->ino;
  add_file_rows(info, kInfo | kTop | dbg, mount_uid_, mount_gid_);
  for (size_t i = 0; i < schemas_.schemas.size(); ++i) {
    const schemata::Schema& s = schemas_.schemas[i];
    Node* d = nodes_.add(info, s.name, NodeKind::kInfoRes, S_IFDIR | 0755, mount_uid_, mount_gid_,
                         now_seconds());
    d->schema = static_cast<int>(i);
    uint32_t flags = kInfo | kCtrl | dbg | (s.kind == schemata::Kind::CACHE ? kResCache : kResMb);
    add_file_rows(d, flags, mount_uid_, mount_gid_);
  }
  if (info_.perf_pkg.capable) {
    Node* m = nodes_.add(info, "PERF_PKG_MON", NodeKind::kInfoMon, S_IFDIR | 0755, mount_uid_,
                         mount_gid_, now_seconds());
    m->mon_rid = hw::ResourceId::PERF_PKG;
    add_file_rows(m, kInfo | kMon | kResPerfPkg | dbg, mount_uid_, mount_gid_);
  }
  if (info_.mon.capable) {
    Node* m = nodes_.add(info, "L3_MON", NodeKind::kInfoMon, S_IFDIR | 0755, mount_uid_, mount_gid_,
                         now_seconds());
    info_mon_ino_ = m->ino;
    add_file_rows(m, kInfo | kMon | kResCache | dbg, mount_uid_, mount_gid_);
    if (info_.mon.abmc) {
      Node* ec = nodes_.add(m, "event_configs", NodeKind::kEventConfigs, S_IFDIR | 0755, mount_uid_,
                            mount_gid_, now_seconds());
      for (hw::EventId ev : info_.mon.events) {
        if (!is_mbm(ev)) continue;
        Node* e = nodes_.add(ec, event_name(ev), NodeKind::kEventConfig, S_IFDIR | 0755, mount_uid_,
                             mount_gid_, now_seconds());
        e->event = ev;
        add_file_rows(e, kAssignConfig | dbg, mount_uid_, mount_gid_);
        // event_filter is registered 0444 and made 0644 where the counters'
        // transactions can be configured, as Linux's
        // resctrl_l3_mon_resource_init() (fs/resctrl/monitor.c) does from the
        // arch's mbm_cntr_configurable; event_filter_write() refuses otherwise.
        if (info_.mon.mbm_cntr_configurable) {
          if (Node* f = nodes_.child(e, "event_filter")) f->mode |= 0200;
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
  Node* p = nodes_.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  if (!p->is_dir()) return Error::make(ENOTDIR);
  if (name.size() > kNameMax) return Error::make(ENAMETOOLONG);
  Node* c = nodes_.child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  ++c->nlookup;
  return attr_of(*c);
}

Result<Attr> FsImpl::getattr(Ino ino) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  return attr_of(*n);
}

Result<std::vector<DirEntry>> FsImpl::readdir(Ino ino) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (!n->is_dir()) return Error::make(ENOTDIR);
  std::vector<DirEntry> out;
  out.reserve(n->children.size());
  for (const ChildMap::Entry& e : n->children) {
    Node* c = nodes_.get(e.ino);
    if (c != nullptr) out.push_back(DirEntry{e.name, attr_of(*c)});
  }
  return out;
}

Result<Attr> FsImpl::setattr(Ino ino, const uint32_t* mode, const uid_t* uid, const gid_t* gid) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (mode != nullptr) n->mode = (n->mode & S_IFMT) | (*mode & 07777);
  if (uid != nullptr) n->uid = *uid;
  if (gid != nullptr) n->gid = *gid;
  n->ctime = now_seconds();
  // Only group directories' owners and modes are saved.
  if (n->kind == NodeKind::kGroupDir && n->group != nullptr) {
    changes_.group(n->group);
  } else {
    changes_.all();
  }
  return attr_of(*n);
}

Result<OpenFile> FsImpl::open(Ino ino, int flags, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
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
  // Event files and the rows that say so clear last_cmd_status on read,
  // and a failed read leaves its text there.
  if (n.kind == NodeKind::kEventFile) {
    lcs_.clear();
    Result<std::string> r = show_event_file(n);
    set_status(r);
    return r;
  }
  if (!n.row->read_status) return (this->*(n.row->show))(n);
  lcs_.clear();
  Result<std::string> r = (this->*(n.row->show))(n);
  set_status(r);
  return r;
}

void FsImpl::set_status(std::string_view text) { lcs_.printf(text); }

Result<std::string> FsImpl::render(Ino ino, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->is_dir()) return Error::make(EISDIR);
  return render_node(*n);
}

Result<size_t> FsImpl::write(Ino ino, std::string_view data, const Caller& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->kind != NodeKind::kFile) return Error::make(EINVAL);
  if (data.size() > kMaxWriteBytes) return Error::make(E2BIG);
  const FileRow& row = *n->row;
  if (row.write == nullptr) return Error::make(EINVAL);
  if (row.refuse_unlocked != nullptr && row.refuse_unlocked(data)) return Error::make(EINVAL);
  // Every write clears last_cmd_status; a failure leaves its text there.
  lcs_.clear();
  Result<void> r = (this->*(row.write))(*n, data, caller);
  set_status(r);
  // A failed write may have done part of its work (tasks lists): marked too.
  changes_.after_write(*n);
  if (!r.ok()) return std::move(r).error();
  n->mtime = now_seconds();
  return data.size();
}

Result<Attr> FsImpl::create(Ino parent, std::string_view name) { return Error::make(EACCES); }

Result<void> FsImpl::unlink(Ino parent, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* p = nodes_.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  Node* c = nodes_.child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  if (c->is_dir()) return Error::make(EISDIR);
  return Error::make(EPERM);
}

void FsImpl::forget(Ino ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = nodes_.get(ino);
  if (n == nullptr || ino == kRootIno) return;
  n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
  if (n->nlookup == 0 && n->removed) nodes_.release(ino);
}

}  // namespace resctrlfs::fs::internal

// Implements the VFS-facing operations of FsImpl that do not change groups
// and the Tree part behind them: lookup, getattr,
// readdir, setattr, open, write dispatch, create/unlink refusals, forget, and building the
// directory trees of groups and info/ from the file table.
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <string>

#include "fs/events.h"
#include "fs/impl.h"
#include "fs/io_channels.h"

namespace resctrlfs::fs::internal {

namespace {

constexpr size_t kNameMax = 255;

bool row_matches(const FileRow& row, uint32_t flags) {
  return row.flags != 0 && (row.flags & ~flags) == 0;
}

// The rows of a resource's info/<RES>_MON, as the kernel's per-resource
// file flags (r->fflags) choose them: a cache's monitoring (its occupancy
// threshold, bandwidth counter configuration) or a package's telemetry.
uint32_t mon_info_flags(const hw::Resource& r) {
  return r.mon.scope == hw::Scope::PACKAGE ? uint32_t{kResPerfPkg} : uint32_t{kResCache};
}

}  // namespace

std::string mon_domain_dir_name(hw::ResourceId rid, int id, bool sub) {
  char num[16];
  std::snprintf(num, sizeof(num), "%02d", id);
  return std::string(sub ? "mon_sub_" : "mon_") + hw::resource_name(rid) + "_" + num;
}

void Tree::add_file_rows(Node* dir, uint32_t flags, uid_t uid, gid_t gid) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    if (!rows_.holds(row)) continue;
    Node* f = m_.nodes.add(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, uid, gid,
                           m_.now_seconds());
    f->row = &row;
  }
}

void Tree::sync_file_rows(Node* dir, uint32_t flags) {
  for (const FileRow& row : file_table()) {
    if (!row_matches(row, flags)) continue;
    bool want = rows_.holds(row);
    Node* f = m_.nodes.child(dir, row.name);
    if (want && f == nullptr) {
      Node* nf = m_.nodes.add(dir, row.name, NodeKind::kFile, S_IFREG | row.mode, dir->uid,
                              dir->gid, m_.now_seconds());
      nf->row = &row;
      if (m_.inval != nullptr) m_.inval->inval_entry(dir->ino, row.name);
    } else if (!want && f != nullptr) {
      m_.nodes.remove(f, m_.inval);
    }
  }
}

uint32_t Tree::group_flags(const Group& g) const {
  uint32_t f = kBase;
  if (g.type == GroupType::kCtrlMon) f |= kCtrl;
  if (m_.mon_capable()) f |= kMon;
  if (m_.opts.debug) f |= kDebug;
  return f;
}

void Tree::build_group_dir(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid) {
  dir->group = g;
  g->dir = dir->ino;
  add_file_rows(dir, group_flags(*g), uid, gid);
  if (m_.mon_capable()) {
    if (g->type == GroupType::kCtrlMon) {
      Node* mg = m_.nodes.add(dir, "mon_groups", NodeKind::kMonGroups, S_IFDIR | dir_mode, uid, gid,
                              m_.now_seconds());
      g->mon_groups_dir = mg->ino;
    }
    build_mon_data(g, dir, dir_mode, uid, gid);
  }
}

void Tree::build_mon_data(Group* g, Node* dir, uint32_t dir_mode, uid_t uid, gid_t gid) {
  Node* md = m_.nodes.add(dir, "mon_data", NodeKind::kMonData, S_IFDIR | dir_mode, uid, gid,
                          m_.now_seconds());
  // One directory per monitoring domain of every monitor-capable resource,
  // as the kernel's mkdir_mondata_all() walks its resources.
  hw::for_each_mon_capable(m_.info, [&](const hw::Resource& r) {
    for (const hw::MonDomain& d : r.mon.mon_domains) build_mon_domain(md, r.rid, d.id);
  });
}

Node* Tree::build_mon_domain(Node* md, hw::ResourceId rid, int domain_id) {
  const hw::MonCaps& mon = m_.info.res(rid).mon;
  auto add_events = [&](Node* dd) {
    dd->mon_rid = rid;
    for (const hw::MonEvent& ev : mon.events) {
      Node* f = m_.nodes.add(dd, event_name(ev.id), NodeKind::kEventFile, S_IFREG | 0444, md->uid,
                             md->gid, m_.now_seconds());
      f->event = ev.id;
    }
  };
  // Under SNC the domain is a NUMA node: its directory goes below the one of
  // the cache it shares, created with the cache's first node.
  const bool snc = mon.snc_ways > 1;
  int unit_id = domain_id;
  if (snc) {
    for (const hw::MonDomain& d : mon.mon_domains)
      if (d.id == domain_id) unit_id = d.l3_id;
  }
  const std::string name = mon_domain_dir_name(rid, unit_id, false);
  Node* dd = m_.nodes.child(md, name);
  Node* created = nullptr;
  if (dd == nullptr) {
    dd = m_.nodes.add(md, name, NodeKind::kMonDomain, md->mode, md->uid, md->gid, m_.now_seconds());
    // With SNC this directory stands for the whole cache: its files sum the
    // node domains below it.
    dd->domain = unit_id;
    dd->mon_sum = snc;
    add_events(dd);
    created = dd;
  }
  if (!snc) return dd;
  Node* sub = m_.nodes.add(dd, mon_domain_dir_name(rid, domain_id, true), NodeKind::kMonDomain,
                           md->mode, md->uid, md->gid, m_.now_seconds());
  sub->domain = domain_id;
  sub->mon_sum = false;
  add_events(sub);
  return created != nullptr ? created : sub;
}

void Tree::build_info_tree() {
  const uint32_t dbg = m_.opts.debug ? uint32_t{kDebug} : 0U;
  Node* info = m_.nodes.add(m_.root_node, "info", NodeKind::kInfo, S_IFDIR | 0755, m_.mount_uid,
                            m_.mount_gid, m_.now_seconds());
  info->group = nullptr;
  m_.info_ino = info->ino;
  add_file_rows(info, kInfo | kTop | dbg, m_.mount_uid, m_.mount_gid);
  for (size_t i = 0; i < m_.schemas.schemas.size(); ++i) {
    const schemata::Schema& s = m_.schemas.schemas[i];
    Node* d = m_.nodes.add(info, s.name, NodeKind::kInfoRes, S_IFDIR | 0755, m_.mount_uid,
                           m_.mount_gid, m_.now_seconds());
    d->schema = static_cast<int>(i);
    uint32_t flags = kInfo | kCtrl | dbg | (s.kind == schemata::Kind::CACHE ? kResCache : kResMb);
    add_file_rows(d, flags, m_.mount_uid, m_.mount_gid);
  }
  // <RES>_MON for every monitor-capable resource, as the kernel's
  // rdtgroup_create_info_dir() walks them.
  hw::for_each_mon_capable(m_.info, [&](const hw::Resource& r) {
    Node* m = m_.nodes.add(info, std::string(hw::resource_name(r.rid)) + "_MON", NodeKind::kInfoMon,
                           S_IFDIR | 0755, m_.mount_uid, m_.mount_gid, m_.now_seconds());
    m->mon_rid = r.rid;
    // Memory bandwidth counters (and with them the assignment and event
    // configuration files) are L3's, as in the kernel's fs/resctrl/monitor.c.
    if (r.rid == hw::ResourceId::L3) m_.info_mon_ino = m->ino;
    add_file_rows(m, kInfo | kMon | mon_info_flags(r) | dbg, m_.mount_uid, m_.mount_gid);
    if (!r.mon.cntr_assign.capable) return;
    Node* ec = m_.nodes.add(m, "event_configs", NodeKind::kEventConfigs, S_IFDIR | 0755,
                            m_.mount_uid, m_.mount_gid, m_.now_seconds());
    for (const hw::MonEvent& ev : r.mon.events) {
      if (!m_.is_mbm(ev.id)) continue;
      Node* e = m_.nodes.add(ec, event_name(ev.id), NodeKind::kEventConfig, S_IFDIR | 0755,
                             m_.mount_uid, m_.mount_gid, m_.now_seconds());
      e->event = ev.id;
      add_file_rows(e, kAssignConfig | dbg, m_.mount_uid, m_.mount_gid);
      // event_filter is registered 0444 and made 0644 where the counters'
      // transactions can be configured, as Linux's
      // resctrl_l3_mon_resource_init() (fs/resctrl/monitor.c) does from the
      // arch's mbm_cntr_configurable; event_filter_write() refuses otherwise.
      if (r.mon.cntr_assign.configurable) {
        if (Node* f = m_.nodes.child(e, "event_filter")) f->mode |= 0200;
      }
    }
  });
  io_ch_.build_info(info);
}

Group* Tree::group_of(const Node& n) const {
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

Attr Tree::attr_of(const Node& n) const {
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
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* p = m_.nodes.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  if (!p->is_dir()) return Error::make(ENOTDIR);
  if (name.size() > kNameMax) return Error::make(ENAMETOOLONG);
  Node* c = m_.nodes.child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  ++c->nlookup;
  return p_.tree.attr_of(*c);
}

Result<Attr> FsImpl::getattr(Ino ino) {
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  return p_.tree.attr_of(*n);
}

Result<std::vector<DirEntry>> FsImpl::readdir(Ino ino) {
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (!n->is_dir()) return Error::make(ENOTDIR);
  std::vector<DirEntry> out;
  out.reserve(n->children.size());
  for (const ChildMap::Entry& e : n->children) {
    Node* c = m_.nodes.get(e.ino);
    if (c != nullptr) out.push_back(DirEntry{e.name, p_.tree.attr_of(*c)});
  }
  return out;
}

Result<Attr> FsImpl::setattr(Ino ino, const uint32_t* mode, const uid_t* uid, const gid_t* gid) {
  CommandLock lock(*this);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr || n->removed) return Error::make(ENOENT);
  if (mode != nullptr) n->mode = (n->mode & S_IFMT) | (*mode & 07777);
  if (uid != nullptr) n->uid = *uid;
  if (gid != nullptr) n->gid = *gid;
  n->ctime = m_.now_seconds();
  // Only group directories' owners and modes are saved.
  if (n->kind == NodeKind::kGroupDir && n->group != nullptr) {
    m_.changes.group(n->group);
  } else {
    m_.changes.all();
  }
  return p_.tree.attr_of(*n);
}

Result<OpenFile> FsImpl::open(Ino ino, int flags, const Caller& caller) {
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->is_dir()) return Error::make(EISDIR);
  const int acc = flags & O_ACCMODE;
  OpenFile of;
  of.ino = ino;
  of.reads_hardware = n->kind == NodeKind::kEventFile;
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
    m_.lcs.clear();
    Result<std::string> r = mon_.show_event_file(n);
    m_.set_status(r);
    return r;
  }
  if (!n.row->read_status) return n.row->show(p_, n);
  m_.lcs.clear();
  Result<std::string> r = n.row->show(p_, n);
  m_.set_status(r);
  return r;
}

Result<std::shared_ptr<const std::string>> FsImpl::render_node_shared(const Node& n) {
  if (n.kind == NodeKind::kFile && n.row->show_shared != nullptr) {
    if (!n.row->read_status) return n.row->show_shared(p_, n);
    m_.lcs.clear();
    Result<std::shared_ptr<const std::string>> r = n.row->show_shared(p_, n);
    m_.set_status(r);
    return r;
  }
  Result<std::string> r = render_node(n);
  if (!r.ok()) return std::move(r).error();
  return std::make_shared<const std::string>(std::move(r).value());
}

template <class F>
auto FsImpl::read_node(Ino ino, F&& show) -> decltype(show(std::declval<Node&>())) {
  auto locked = [&]() -> decltype(show(std::declval<Node&>())) {
    Node* n = m_.nodes.get(ino);
    if (n == nullptr) return Error::make(ENOENT);
    if (n->removed) return Error::make(ENODEV);
    if (n->is_dir()) return Error::make(EISDIR);
    return show(*n);
  };
  {
    std::lock_guard<OwnedMutex> lock(mu_);
    const Node* n = m_.nodes.get(ino);
    // Event files read counters: a command's work, after the one running.
    if (n == nullptr || n->kind != NodeKind::kEventFile) return locked();
  }
  CommandLock lock(*this);
  return locked();
}

std::unique_ptr<PidView> FsImpl::task_view(Ino ino, const Caller& caller) {
  {
    std::lock_guard<OwnedMutex> lock(mu_);
    const Node* n = m_.nodes.get(ino);
    if (n == nullptr || n->kind != NodeKind::kFile || !n->row->task_ids) return nullptr;
  }
  // m_.tasks is set at construction and never changes.
  return m_.tasks != nullptr ? m_.tasks->pid_view(caller.tid) : nullptr;
}

Result<std::string> FsImpl::render(Ino ino, const Caller& caller) {
  std::unique_ptr<PidView> view = task_view(ino, caller);
  Result<std::string> r = read_node(ino, [&](const Node& n) { return render_node(n); });
  // The ids the reader sees, outside the lock: the snapshot is the model's.
  if (view == nullptr || !r.ok()) return r;
  return task_ids_as_seen(*r, *view);
}

Result<std::shared_ptr<const std::string>> FsImpl::render_shared(Ino ino, const Caller& caller) {
  std::unique_ptr<PidView> view = task_view(ino, caller);
  Result<std::shared_ptr<const std::string>> r =
      read_node(ino, [&](const Node& n) { return render_node_shared(n); });
  if (view == nullptr || !r.ok()) return r;
  return std::make_shared<const std::string>(task_ids_as_seen(**r, *view));
}

Result<size_t> FsImpl::write(Ino ino, std::string_view data, const Caller& caller_in) {
  std::unique_ptr<PidView> view = task_view(ino, caller_in);
  Caller caller = caller_in;
  caller.pids = view.get();
  CommandLock lock(*this);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr) return Error::make(ENOENT);
  if (n->removed) return Error::make(ENODEV);
  if (n->kind != NodeKind::kFile) return Error::make(EINVAL);
  if (data.size() > kMaxWriteBytes) return Error::make(E2BIG);
  const FileRow& row = *n->row;
  if (row.write == nullptr) return Error::make(EINVAL);
  if (row.refuse_unlocked != nullptr && row.refuse_unlocked(data)) return Error::make(EINVAL);
  // Every write clears last_cmd_status; a failure leaves its text there.
  m_.lcs.clear();
  Result<void> r = row.write(p_, *n, data, caller);
  m_.set_status(r);
  // A failed write may have done part of its work (tasks lists): marked too.
  m_.changes.after_write(*n);
  if (!r.ok()) return std::move(r).error();
  n->mtime = m_.now_seconds();
  return data.size();
}

Result<Attr> FsImpl::create(Ino parent, std::string_view name) { return Error::make(EACCES); }

Result<void> FsImpl::unlink(Ino parent, std::string_view name) {
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* p = m_.nodes.get(parent);
  if (p == nullptr || p->removed) return Error::make(ENOENT);
  Node* c = m_.nodes.child(p, name);
  if (c == nullptr) return Error::make(ENOENT);
  if (c->is_dir()) return Error::make(EISDIR);
  return Error::make(EPERM);
}

void FsImpl::forget(Ino ino, uint64_t nlookup) {
  std::lock_guard<OwnedMutex> lock(mu_);
  Node* n = m_.nodes.get(ino);
  if (n == nullptr || ino == kRootIno) return;
  n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
  if (n->nlookup != 0 || !n->removed) return;
  // A command waiting on the hardware may still point at the node.
  if (command_running_) {
    deferred_release_.push_back(ino);
    return;
  }
  m_.nodes.release(ino);
}

void FsImpl::release_deferred() {
  for (Ino ino : deferred_release_) {
    Node* n = m_.nodes.get(ino);
    if (n != nullptr && n->nlookup == 0 && n->removed) m_.nodes.release(ino);
  }
  deferred_release_.clear();
}

}  // namespace resctrlfs::fs::internal

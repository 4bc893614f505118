// Defines floor_fs: the smallest FUSE filesystem that serves a resctrl-shaped
// tree with the same libfuse settings as resctrlfsd. The benchmark measures it
// next to resctrlfsd so that the cost any FUSE design pays (the round trips)
// is separated from the cost of resctrlfs' own semantics.
//
// What it serves (all in memory, one mutex):
//   /schemata, /tasks, /cpus            writable files (content kept verbatim)
//   /mon_data/mon_L3_DD/<event>         generated counters, new value per read
//   /mon_groups/                        mkdir here makes a MON group
//   mkdir at the root makes a CTRL_MON group; rmdir removes a whole group.
// Settings shared with resctrlfsd (see daemon/fuse_bridge.h):
// low-level API, single-threaded loop (or --mt), entry/attr timeout 3600 s,
// direct_io on every file, st_size 0, cache_readdir with zero-message opendir,
// no flush handler, default_permissions, allow_other.
//
// Usage: floor_fs [--domains D] [--control SOCKET] [--mt] -f [-o OPTS] MOUNTPOINT
// The control socket answers {"cmd":"stats"} with per-opcode request counts
// and {"cmd":"stats-reset"}, one JSON object per line, like resctrlfsd's.
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_input.h"

namespace {

constexpr double kTimeout = 3600.0;
const char* const kEvents[] = {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"};

enum class Kind { kDir, kCounter, kFile };

struct Node {
  fuse_ino_t ino = 0;
  fuse_ino_t parent = 0;
  std::string name;
  Kind kind = Kind::kDir;
  mode_t mode = 0;
  std::map<std::string, fuse_ino_t> children;
  std::string data;  // kFile content
  // kFile content as last read, shared by the fds that read it (null
  // after a write): a read at offset 0 copies nothing, like resctrlfsd's
  // cached tasks text.
  std::shared_ptr<const std::string> frozen;
  uint64_t reads = 0;     // kCounter: advances on every read at offset 0
  uint64_t nlookup = 0;   // kernel references (lookup/mkdir minus forget)
  bool unlinked = false;  // removed from the tree, kept until forgotten
};

// Per-open snapshot: content is rendered at offset 0 and served from here for
// offsets > 0, like resctrlfsd does, so multi-READ files never tear.
struct OpenFile {
  fuse_ino_t ino;
  std::shared_ptr<const std::string> snapshot;
};

// Request counters, by the opcode names resctrlfsd's stats use.
enum Op {
  kLookup,
  kForget,
  kGetattr,
  kSetattr,
  kMkdir,
  kRmdir,
  kOpen,
  kRead,
  kWrite,
  kRelease,
  kOpendir,
  kReaddir,
  kReleasedir,
  kStatfs,
  kOpCount
};
const char* const kOpNames[kOpCount] = {"LOOKUP",  "FORGET",  "GETATTR",    "SETATTR", "MKDIR",
                                        "RMDIR",   "OPEN",    "READ",       "WRITE",   "RELEASE",
                                        "OPENDIR", "READDIR", "RELEASEDIR", "STATFS"};

class FloorFs {
 public:
  explicit FloorFs(int domains) : domains_(domains) {
    next_ino_ = FUSE_ROOT_ID;
    Node* root = new_node(0, "", Kind::kDir, S_IFDIR | 0755);
    populate_group(root, /*ctrl=*/true);
  }

  void count(Op op) { counts_[op].fetch_add(1, std::memory_order_relaxed); }
  nlohmann::json stats() const {
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < kOpCount; ++i) j[kOpNames[i]] = counts_[i].load();
    return j;
  }
  void reset_stats() {
    for (auto& c : counts_) c.store(0);
  }

  std::mutex mu;  // guards everything below; taken by every handler

  Node* get(fuse_ino_t ino) {
    auto it = nodes_.find(ino);
    return it == nodes_.end() ? nullptr : it->second.get();
  }

  void fill_attr(const Node* n, struct stat* st) const {
    memset(st, 0, sizeof(*st));
    st->st_ino = n->ino;
    st->st_mode = n->mode;
    st->st_nlink = n->kind == Kind::kDir ? 2 : 1;
    st->st_size = 0;  // like kernfs: content is generated, size unknown
    st->st_blksize = 4096;
  }

  void fill_entry(Node* n, fuse_entry_param* e) {
    memset(e, 0, sizeof(*e));
    e->ino = n->ino;
    e->attr_timeout = kTimeout;
    e->entry_timeout = kTimeout;
    fill_attr(n, &e->attr);
    ++n->nlookup;
  }

  std::shared_ptr<const std::string> render(Node* n) {
    if (n->kind == Kind::kFile) {
      if (!n->frozen) n->frozen = std::make_shared<const std::string>(n->data);
      return n->frozen;
    }
    // A counter that moves on every read, sized like a real byte count.
    uint64_t v = n->ino * 1048576 + (++n->reads) * 4096;
    return std::make_shared<const std::string>(std::to_string(v) + "\n");
  }

  // mkdir: at the root a CTRL_MON group, under a mon_groups directory a MON
  // group, elsewhere EPERM like resctrl.
  int mkdir(fuse_ino_t parent, const char* name, Node** out) {
    Node* p = get(parent);
    if (!p || p->kind != Kind::kDir) return ENOENT;
    if (p->children.count(name)) return EEXIST;
    bool ctrl = parent == FUSE_ROOT_ID;
    if (!ctrl && p->name != "mon_groups") return EPERM;
    Node* g = new_node(parent, name, Kind::kDir, S_IFDIR | 0755);
    populate_group(g, ctrl);
    *out = g;
    return 0;
  }

  int rmdir(fuse_ino_t parent, const char* name) {
    Node* p = get(parent);
    if (!p) return ENOENT;
    auto it = p->children.find(name);
    if (it == p->children.end()) return ENOENT;
    Node* g = get(it->second);
    if (g->kind != Kind::kDir) return ENOTDIR;
    if (g->children.count("mon_data") == 0) return EPERM;  // not a group
    p->children.erase(it);
    unlink_tree(g);
    return 0;
  }

  void forget(fuse_ino_t ino, uint64_t n) {
    Node* node = get(ino);
    if (!node) return;
    node->nlookup = node->nlookup > n ? node->nlookup - n : 0;
    if (node->nlookup == 0 && node->unlinked) nodes_.erase(ino);
  }

 private:
  Node* new_node(fuse_ino_t parent, const std::string& name, Kind kind, mode_t mode) {
    auto n = std::make_unique<Node>();
    n->ino = next_ino_++;
    n->parent = parent;
    n->name = name;
    n->kind = kind;
    n->mode = mode;
    Node* raw = n.get();
    nodes_[raw->ino] = std::move(n);
    if (parent != 0) get(parent)->children[name] = raw->ino;
    return raw;
  }

  void populate_group(Node* g, bool ctrl) {
    if (ctrl) {
      Node* s = new_node(g->ino, "schemata", Kind::kFile, S_IFREG | 0644);
      s->data = "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n";
      Node* m = new_node(g->ino, "mon_groups", Kind::kDir, S_IFDIR | 0755);
      (void)m;
    }
    new_node(g->ino, "tasks", Kind::kFile, S_IFREG | 0644);
    new_node(g->ino, "cpus", Kind::kFile, S_IFREG | 0644)->data = "ff\n";
    Node* md = new_node(g->ino, "mon_data", Kind::kDir, S_IFDIR | 0555);
    for (int d = 0; d < domains_; ++d) {
      char dn[32];
      snprintf(dn, sizeof(dn), "mon_L3_%02d", d);
      Node* dom = new_node(md->ino, dn, Kind::kDir, S_IFDIR | 0555);
      for (const char* ev : kEvents) new_node(dom->ino, ev, Kind::kCounter, S_IFREG | 0444);
    }
  }

  // Detaches a subtree; nodes the kernel does not reference go at once, the
  // others when their last forget arrives.
  void unlink_tree(Node* n) {
    std::vector<fuse_ino_t> kids;
    for (auto& [name, ino] : n->children) kids.push_back(ino);
    n->children.clear();
    for (fuse_ino_t k : kids) unlink_tree(get(k));
    n->unlinked = true;
    if (n->nlookup == 0) nodes_.erase(n->ino);
  }

  int domains_;
  fuse_ino_t next_ino_ = 1;
  std::unordered_map<fuse_ino_t, std::unique_ptr<Node>> nodes_;
  std::atomic<uint64_t> counts_[kOpCount] = {};
};

FloorFs* g_fs = nullptr;

void op_init(void*, fuse_conn_info* conn) {
  // No splice, no writeback cache: small payloads, synchronous write errors.
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
                  FUSE_CAP_WRITEBACK_CACHE);
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  g_fs->count(kLookup);
  std::lock_guard lock(g_fs->mu);
  Node* p = g_fs->get(parent);
  Node* child = nullptr;
  if (p) {
    auto it = p->children.find(name);
    if (it != p->children.end()) child = g_fs->get(it->second);
  }
  if (!child) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e;
  g_fs->fill_entry(child, &e);
  fuse_reply_entry(req, &e);
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  g_fs->count(kForget);
  {
    std::lock_guard lock(g_fs->mu);
    g_fs->forget(ino, nlookup);
  }
  fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  g_fs->count(kForget);
  {
    std::lock_guard lock(g_fs->mu);
    for (size_t i = 0; i < count; ++i) g_fs->forget(forgets[i].ino, forgets[i].nlookup);
  }
  fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  g_fs->count(kGetattr);
  std::lock_guard lock(g_fs->mu);
  Node* n = g_fs->get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st;
  g_fs->fill_attr(n, &st);
  fuse_reply_attr(req, &st, kTimeout);
}

// Only truncation reaches here (atomic_o_trunc folds O_TRUNC into OPEN).
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat*, int to_set, fuse_file_info*) {
  g_fs->count(kSetattr);
  std::lock_guard lock(g_fs->mu);
  Node* n = g_fs->get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if ((to_set & FUSE_SET_ATTR_SIZE) && n->kind == Kind::kFile) {
    n->data.clear();
    n->frozen = nullptr;
  }
  struct stat st;
  g_fs->fill_attr(n, &st);
  fuse_reply_attr(req, &st, kTimeout);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t) {
  g_fs->count(kMkdir);
  std::lock_guard lock(g_fs->mu);
  Node* g = nullptr;
  if (int err = g_fs->mkdir(parent, name, &g)) {
    fuse_reply_err(req, err);
    return;
  }
  fuse_entry_param e;
  g_fs->fill_entry(g, &e);
  fuse_reply_entry(req, &e);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  g_fs->count(kRmdir);
  std::lock_guard lock(g_fs->mu);
  fuse_reply_err(req, g_fs->rmdir(parent, name));
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  g_fs->count(kOpen);
  std::lock_guard lock(g_fs->mu);
  Node* n = g_fs->get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if ((fi->flags & O_TRUNC) && n->kind == Kind::kFile) {
    n->data.clear();
    n->frozen = nullptr;
  }
  fi->fh = reinterpret_cast<uint64_t>(new OpenFile{ino, {}});
  fi->direct_io = 1;  // generated content: the page cache would clip at st_size 0
  fi->keep_cache = 0;
  fuse_reply_open(req, fi);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  g_fs->count(kRead);
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  if (off == 0) {
    std::lock_guard lock(g_fs->mu);
    Node* n = g_fs->get(of->ino);
    of->snapshot = n ? g_fs->render(n) : std::make_shared<const std::string>();
  }
  if (!of->snapshot || static_cast<size_t>(off) >= of->snapshot->size()) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  size_t len = std::min(size, of->snapshot->size() - off);
  fuse_reply_buf(req, of->snapshot->data() + off, len);
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
              fuse_file_info*) {
  g_fs->count(kWrite);
  std::lock_guard lock(g_fs->mu);
  Node* n = g_fs->get(ino);
  if (!n || n->kind != Kind::kFile) {
    fuse_reply_err(req, EACCES);
    return;
  }
  if (n->data.size() < off + size) n->data.resize(off + size);
  n->data.replace(off, size, buf, size);
  n->frozen = nullptr;
  fuse_reply_write(req, size);
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  g_fs->count(kRelease);
  delete reinterpret_cast<OpenFile*>(fi->fh);
  fuse_reply_err(req, 0);
}

// Returning ENOSYS makes the kernel skip OPENDIR/RELEASEDIR from now on and
// cache listings (zero-message opendir); mkdir/rmdir invalidate the cache.
void op_opendir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  g_fs->count(kOpendir);
  fuse_reply_err(req, ENOSYS);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  g_fs->count(kReaddir);
  std::lock_guard lock(g_fs->mu);
  Node* n = g_fs->get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  std::vector<std::pair<std::string, Node*>> entries;
  entries.emplace_back(".", n);
  entries.emplace_back("..", g_fs->get(n->parent ? n->parent : n->ino));
  for (auto& [name, child] : n->children) entries.emplace_back(name, g_fs->get(child));
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = off; i < entries.size(); ++i) {
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = entries[i].second->ino;
    st.st_mode = entries[i].second->mode;
    size_t need = fuse_add_direntry(req, buf.data() + used, size - used, entries[i].first.c_str(),
                                    &st, i + 1);
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  g_fs->count(kReleasedir);
  fuse_reply_err(req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  g_fs->count(kStatfs);
  struct statvfs sv;
  memset(&sv, 0, sizeof(sv));
  sv.f_bsize = 4096;
  sv.f_namemax = 255;
  fuse_reply_statfs(req, &sv);
}

const fuse_lowlevel_ops kOps = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .mkdir = op_mkdir,
    .rmdir = op_rmdir,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .release = op_release,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .statfs = op_statfs,
    .forget_multi = op_forget_multi,
};

// Serves the control socket: one JSON command per line, one JSON reply per line.
void serve_control(int lfd) {
  for (;;) {
    int c = accept(lfd, nullptr, nullptr);
    if (c < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::string in;
    char buf[512];
    ssize_t r;
    while ((r = read(c, buf, sizeof(buf))) > 0) {
      in.append(buf, r);
      size_t nl;
      while ((nl = in.find('\n')) != std::string::npos) {
        std::string line = in.substr(0, nl);
        in.erase(0, nl + 1);
        nlohmann::json reply;
        // Outside input: parsed and read with the checks of
        // base/json_input.h, like the daemon's own control socket.
        auto cmd = resctrlfs::parse_json(line);
        std::string name = cmd.ok() ? resctrlfs::JsonIn(*cmd).string_at("cmd").value_or("") : "";
        if (name == "stats") {
          reply = {{"ok", true}, {"requests", g_fs->stats()}};
        } else if (name == "stats-reset") {
          g_fs->reset_stats();
          reply = {{"ok", true}};
        } else {
          reply = {{"ok", false}, {"error", "unknown command"}};
        }
        std::string out = reply.dump() + "\n";
        if (write(c, out.data(), out.size()) < 0) break;
      }
    }
    close(c);
  }
}

int listen_control(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return -1;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 || listen(fd, 4) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  int domains = 2;
  bool mt = false;
  std::string control;
  std::vector<char*> fargs = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--domains" && i + 1 < argc) {
      domains = atoi(argv[++i]);
    } else if (a == "--control" && i + 1 < argc) {
      control = argv[++i];
    } else if (a == "--mt") {
      mt = true;
    } else {
      fargs.push_back(argv[i]);
    }
  }
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fargs.size()), fargs.data());
  fuse_cmdline_opts opts{};
  if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
    fprintf(stderr, "usage: %s [--domains D] [--control SOCKET] [--mt] -f [-o OPTS] MOUNTPOINT\n",
            argv[0]);
    return 2;
  }
  fuse_opt_add_arg(&args, "-odefault_permissions,allow_other,fsname=floor,subtype=floor");

  FloorFs fs(domains);
  g_fs = &fs;
  if (!control.empty()) {
    int lfd = listen_control(control);
    if (lfd < 0) {
      perror("control socket");
      return 1;
    }
    std::thread(serve_control, lfd).detach();
  }

  fuse_session* se = fuse_session_new(&args, &kOps, sizeof(kOps), nullptr);
  int ret = 1;
  if (se && fuse_set_signal_handlers(se) == 0) {
    if (fuse_session_mount(se, opts.mountpoint) == 0) {
      if (mt) {
        fuse_loop_config* cfg = fuse_loop_cfg_create();
        fuse_loop_cfg_set_clone_fd(cfg, 1);
        fuse_loop_cfg_set_max_threads(cfg, 4);
        ret = fuse_session_loop_mt(se, cfg);
        fuse_loop_cfg_destroy(cfg);
      } else {
        ret = fuse_session_loop(se);
      }
      fuse_session_unmount(se);
    }
    fuse_remove_signal_handlers(se);
  }
  if (se) fuse_session_destroy(se);
  free(opts.mountpoint);
  fuse_opt_free_args(&args);
  if (!control.empty()) unlink(control.c_str());
  return ret ? 1 : 0;
}

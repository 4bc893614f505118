// Implements FuseBridge: the libfuse3 low-level operations table over
// fs::Filesystem, the request loop step and the invalidation thread. This is
// the only file of the project that includes fuse_lowlevel.h.
//
// Every handler replies exactly once: it computes a Result with a do_* helper
// and the handler itself is the only place that calls fuse_reply_*. Handlers
// of commands (write, mkdir, rmdir, rename, setattr, reads of files that
// read registers) copy what they need out of the request buffer and hand
// the rest to the command runner, which replies from its own thread; the
// others run and reply on the loop's thread.
#define FUSE_USE_VERSION 312
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/fuse_bridge.h"

namespace resctrlfs::daemon {

namespace {

// How long the loop waits for the kernel to take invalidations.
constexpr std::chrono::milliseconds kInvalidationWait{20};

// An open file: what fs/ returned at open, and the last rendering of its
// contents (none until the first read). The rendering is an immutable
// buffer that fs/ may share with its cache and with other fds (a tasks
// file): a re-render swaps a new buffer in and leaves this one as it was.
struct Handle {
  fs::OpenFile file;
  std::shared_ptr<const std::string> content;  // null: not rendered
};

int errno_of(const Error& e) { return e.code > 0 ? e.code : EIO; }

// Linux 6.9's resend of the requests a dead daemon had read (Debian 12's
// linux/fuse.h predates it): the notify code, and the bit the kernel sets
// in a resent request's unique id.
constexpr int kFuseNotifyResend = 7;
constexpr uint64_t kFuseUniqueResend = uint64_t{1} << 63;

// The command running on this thread: its FUSE unique id as the kernel
// sent it (0: none).
thread_local uint64_t tl_unique = 0;
// Its result as the journal records it (bytes written, or -errno).
thread_local int64_t tl_result = 0;

// The libfuse options string of every mount of ours.
std::string session_options(const FuseSettings& settings) {
  std::string opts = "fsname=resctrl,subtype=resctrl,default_permissions,allow_other";
  for (const std::string& o : settings.fuse_options) opts += "," + o;
  return opts;
}

fuse_session* new_session(const std::string& opts, const fuse_lowlevel_ops* ops, size_t size,
                          void* userdata) {
  std::vector<std::string> argv_s = {"resctrlfsd", "-o", opts};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, ops, size, userdata);
  fuse_opt_free_args(&args);
  return se;
}

// The INIT file: "RFI1", then the request and the reply, each as a
// 32-bit length and its bytes.
std::string encode_init(const std::string& req, const std::string& reply) {
  std::string out = "RFI1";
  for (const std::string* part : {&req, &reply}) {
    const uint32_t n = static_cast<uint32_t>(part->size());
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out += *part;
  }
  return out;
}

bool decode_init(const std::string& text, std::string& req, std::string& reply) {
  if (text.compare(0, 4, "RFI1") != 0) return false;
  size_t pos = 4;
  for (std::string* part : {&req, &reply}) {
    uint32_t n = 0;
    if (text.size() < pos + sizeof(n)) return false;
    std::memcpy(&n, text.data() + pos, sizeof(n));
    pos += sizeof(n);
    if (text.size() < pos + n) return false;
    part->assign(text, pos, n);
    pos += n;
  }
  // At least the header and the protocol version of each.
  return req.size() >= sizeof(fuse_in_header) + 2 * sizeof(uint32_t) &&
         reply.size() >= sizeof(fuse_out_header) + 2 * sizeof(uint32_t);
}

// Writes `text` to `path` (in a directory only root may write: the state
// directory) atomically: a new temporary file, then a rename.
bool write_file_atomically(const std::string& path, const std::string& text) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return false;
  const std::string tmp = base + ".tmp";
  (void)unlinkat(dfd, tmp.c_str(), 0);
  const int fd =
      openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) ::close(fd);
  ok = ok && renameat(dfd, tmp.c_str(), dfd, base.c_str()) == 0;
  ::close(dfd);
  return ok;
}

bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  out.clear();
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return n == 0;
}

void fill_stat(const fs::Attr& a, struct stat* st) {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = a.ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blksize = 4096;
  st->st_mtim.tv_sec = a.mtime;
  st->st_atim.tv_sec = a.mtime;
  st->st_ctim.tv_sec = a.ctime;
}

}  // namespace

struct FuseBridge::Impl {
  fs::Filesystem& fs;
  RequestStats& stats;
  FuseSettings settings;
  fuse_session* se = nullptr;
  fuse_buf buf{};
  bool mounted = false;
  bool no_opendir = false;  // the kernel handles opendir/releasedir itself
  unsigned max_read = 0;    // -o max_read=N, which init must repeat to libfuse
  std::function<void(uint32_t)> hook;
  std::function<Result<void>()> prepare_hook;
  std::function<Result<void>()> commit_hook;
  std::function<void()> write_reply_hook;
  std::function<void(std::function<void()>)> runner;  // empty: run in place

  // An adopted connection (adopt()): libfuse reads and writes through
  // io_read and io_writev. Until INIT has passed, init_state says what is
  // awaited; after, both only pass the bytes on.
  enum InitState : int { kInitNone, kInitFeed, kInitReply, kInitDone };
  bool adopted = false;
  bool takeover = false;
  std::string init_file;
  std::string init_req;    // the kernel's INIT (kept, or to feed libfuse)
  std::string init_reply;  // takeover: the reply the kernel had
  uint64_t init_unique = 0;
  std::atomic<int> init_state{kInitNone};
  bool resend_refused = false;
  // The unique id of the request being dispatched (loop thread).
  uint64_t dispatching_unique = 0;

  static ssize_t io_read(int fd, void* buf, size_t len, void* userdata) {
    auto* s = static_cast<Impl*>(userdata);
    if (s->init_state.load() == kInitFeed) {
      if (len < s->init_req.size()) {
        errno = EIO;
        return -1;
      }
      std::memcpy(buf, s->init_req.data(), s->init_req.size());
      s->init_state = kInitReply;
      return static_cast<ssize_t>(s->init_req.size());
    }
    const ssize_t n = ::read(fd, buf, len);
    if (n >= static_cast<ssize_t>(sizeof(fuse_in_header)) && s->init_state.load() == kInitNone) {
      fuse_in_header h;
      std::memcpy(&h, buf, sizeof(h));
      if (h.opcode == FUSE_INIT) {
        s->init_req.assign(static_cast<const char*>(buf), static_cast<size_t>(n));
        s->init_unique = h.unique;
        s->init_state = kInitReply;
      }
    }
    return n;
  }

  static ssize_t io_writev(int fd, struct iovec* iov, int count, void* userdata) {
    auto* s = static_cast<Impl*>(userdata);
    if (s->init_state.load() == kInitReply) {
      std::string msg;
      for (int i = 0; i < count; ++i)
        msg.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      fuse_out_header h{};
      if (msg.size() >= sizeof(h)) std::memcpy(&h, msg.data(), sizeof(h));
      if (h.unique == s->init_unique && msg.size() >= sizeof(h)) {
        s->init_state = kInitDone;
        if (s->takeover) {
          // The kernel agreed to its INIT long ago: this reply stays here.
          if (msg != s->init_reply)
            spdlog::warn(
                "takeover: this daemon's INIT reply differs from the one the kernel has (another "
                "build?); serving with the kernel's terms");
          return static_cast<ssize_t>(msg.size());
        }
        if (!write_file_atomically(s->init_file, encode_init(s->init_req, msg)))
          spdlog::warn("cannot keep the FUSE INIT in {}: {}: a takeover will fail", s->init_file,
                       strerror(errno));
      }
    }
    return ::writev(fd, iov, count);
  }

  static constexpr fuse_custom_io kIo = {
      .writev = io_writev,
      .read = io_read,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };

  // Open files by file handle. A handle is a key, not a pointer: a daemon
  // that took the connection over (daemon/takeover.h) meets handles its
  // predecessor gave out, and what it needs to serve them comes with every
  // request (the node id in the header, the open flags in READ and WRITE),
  // so an unknown handle is opened again on its first use (adopt()). This
  // daemon's handles carry a random prefix in their top 24 bits, so that
  // they are not the same numbers as a predecessor's. The map's entries
  // are used without the lock: an entry is erased only by RELEASE, which
  // the kernel sends after the last request on the handle, and which runs
  // where the handle's reads run (the command runner for register-reading
  // files).
  std::mutex handles_mu;
  std::unordered_map<uint64_t, std::unique_ptr<Handle>> handles;
  uint64_t handle_prefix = 0;
  uint64_t next_handle = 0;

  uint64_t add_handle(std::unique_ptr<Handle> h) {
    std::lock_guard<std::mutex> lock(handles_mu);
    const uint64_t fh = handle_prefix | (++next_handle & ((uint64_t{1} << 40) - 1));
    handles[fh] = std::move(h);
    return fh;
  }
  Handle* find_handle(uint64_t fh) {
    std::lock_guard<std::mutex> lock(handles_mu);
    auto it = handles.find(fh);
    return it == handles.end() ? nullptr : it->second.get();
  }
  void drop_handle(uint64_t fh) {
    std::unique_ptr<Handle> gone;
    std::lock_guard<std::mutex> lock(handles_mu);
    auto it = handles.find(fh);
    if (it == handles.end()) return;
    gone = std::move(it->second);
    handles.erase(it);
  }
  // The handle `fh`, or, for a handle this daemon did not give out (its
  // predecessor did), one opened again from the request: its node id and
  // open flags. The file's first read renders it afresh (a read past
  // offset 0 continues from that rendering). ENODEV: the file is gone (its
  // group was removed while no daemon ran, or before).
  Result<Handle*> handle_for(uint64_t fh, fs::Ino ino, int flags) {
    if (Handle* h = find_handle(fh)) return h;
    Result<fs::OpenFile> r = fs.open(ino, flags, fs::Caller{0, 0, 0});
    if (!r.ok()) {
      const int e = errno_of(r.error());
      return Error::make(e == ENOENT ? ENODEV : e);
    }
    std::lock_guard<std::mutex> lock(handles_mu);
    auto& slot = handles[fh];
    if (slot == nullptr) slot = std::make_unique<Handle>(Handle{std::move(r).value(), nullptr});
    return slot.get();
  }

  // Runs a command's handler body where commands run, with the request's
  // unique id as current_unique() there.
  void run_command(std::function<void()> job) {
    auto with_id = [u = dispatching_unique, job = std::move(job)] {
      tl_unique = u;
      job();
      tl_unique = 0;
    };
    if (runner) {
      runner(std::move(with_id));
    } else {
      with_id();
    }
  }

  // Parent of every directory inode the kernel knows (for ".." in
  // listings), with the kernel's lookup count so entries die with forget.
  // Replies to lookup and mkdir add to it from both threads. Lock order:
  // known_mu is a leaf.
  struct Known {
    fs::Ino parent = 0;
    uint64_t nlookup = 0;
  };
  std::mutex known_mu;
  std::unordered_map<fs::Ino, Known> known;

  // Invalidation thread. Lock order: inval_mu is a leaf.
  std::mutex inval_mu;
  std::condition_variable inval_cv;
  std::deque<Invalidation> inval_items;
  int inval_busy = 0;  // items taken but not yet told to the kernel
  bool inval_stop = false;
  std::thread inval_thread;

  Impl(fs::Filesystem& f, RequestStats& s, FuseSettings st)
      : fs(f), stats(s), settings(std::move(st)) {}

  static Impl* self(fuse_req_t req) { return static_cast<Impl*>(fuse_req_userdata(req)); }

  // Before a command: false when it is refused (replied to here).
  bool prepared(fuse_req_t req) {
    if (!prepare_hook) return true;
    Result<void> r = prepare_hook();
    if (r.ok()) return true;
    fuse_reply_err(req, errno_of(r.error()));
    return false;
  }

  // A command the kernel resent (the daemon that read it first died) that
  // the journal says was applied: its result, to answer with instead of
  // running it again.
  std::function<std::optional<int64_t>(uint64_t)> applied_hook;
  std::optional<int64_t> already_applied() {
    if (!applied_hook || (tl_unique & kFuseUniqueResend) == 0) return std::nullopt;
    std::optional<int64_t> r = applied_hook(tl_unique & ~kFuseUniqueResend);
    if (r)
      spdlog::info("resent request {} was applied before: answered, not run again",
                   tl_unique & ~kFuseUniqueResend);
    return r;
  }

  // After a command, before its reply: 0, or the errno that replaces a
  // successful command's reply. `result`: the command's own (bytes written
  // or -errno), journaled with its FUSE id.
  int committed(int64_t result) {
    tl_result = result;
    if (!commit_hook) return 0;
    Result<void> r = commit_hook();
    return r.ok() ? 0 : errno_of(r.error());
  }

  static fs::Caller caller(fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    return fs::Caller{ctx->pid, ctx->uid, ctx->gid};
  }

  void remember(fs::Ino parent, const fs::Attr& attr) {
    std::lock_guard<std::mutex> lock(known_mu);
    Known& k = known[attr.ino];
    k.parent = parent;
    ++k.nlookup;
  }

  void forget_known(fs::Ino ino, uint64_t n) {
    std::lock_guard<std::mutex> lock(known_mu);
    auto it = known.find(ino);
    if (it == known.end()) return;
    if (it->second.nlookup <= n) {
      known.erase(it);
    } else {
      it->second.nlookup -= n;
    }
  }

  fs::Ino parent_of(fs::Ino ino) {
    if (ino == fs::kRootIno) return fs::kRootIno;
    std::lock_guard<std::mutex> lock(known_mu);
    auto it = known.find(ino);
    return it == known.end() ? fs::kRootIno : it->second.parent;
  }

  void reply_entry(fuse_req_t req, fs::Ino parent, const fs::Attr& attr) {
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    e.ino = attr.ino;
    e.generation = 1;
    fill_stat(attr, &e.attr);
    e.attr_timeout = settings.attr_timeout_s;
    e.entry_timeout = settings.entry_timeout_s;
    // Known before the kernel is told: its FORGET may follow at once, on
    // the other thread.
    remember(parent, attr);
    if (fuse_reply_entry(req, &e) != 0) forget_known(attr.ino, 1);
  }

  // ---- the operations table ----

  static void op_init(void* userdata, fuse_conn_info* conn) {
    auto* s = static_cast<Impl*>(userdata);
    s->no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
    // The page cache must never hold resctrl content or buffer its writes.
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    // libfuse refuses INIT unless init() asks for the -o max_read it mounted with.
    if (s->max_read != 0) conn->max_read = s->max_read;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    spdlog::debug("FUSE init: protocol {}.{}, zero-message opendir {}", conn->proto_major,
                  conn->proto_minor, s->no_opendir ? "yes" : "no");
  }

  static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    Impl* s = self(req);
    Result<fs::Attr> r = s->fs.lookup(parent, name);
    if (!r.ok()) {
      fuse_reply_err(req, errno_of(r.error()));
      return;
    }
    s->reply_entry(req, parent, *r);
  }

  static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Impl* s = self(req);
    s->fs.forget(ino, nlookup);
    s->forget_known(ino, nlookup);
    fuse_reply_none(req);
  }

  static void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    Impl* s = self(req);
    for (size_t i = 0; i < count; ++i) {
      s->fs.forget(forgets[i].ino, forgets[i].nlookup);
      s->forget_known(forgets[i].ino, forgets[i].nlookup);
    }
    fuse_reply_none(req);
  }

  static void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
    Impl* s = self(req);
    Result<fs::Attr> r = s->fs.getattr(ino);
    if (!r.ok()) {
      fuse_reply_err(req, errno_of(r.error()));
      return;
    }
    struct stat st;
    fill_stat(*r, &st);
    fuse_reply_attr(req, &st, s->settings.attr_timeout_s);
  }

  // chmod/chown/utimes as kernfs allows them; a size change (truncate) is
  // accepted and ignored like kernfs does.
  static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                         fuse_file_info* /*fi*/) {
    Impl* s = self(req);
    const uint32_t mode = attr->st_mode & 07777;
    const uid_t uid = attr->st_uid;
    const gid_t gid = attr->st_gid;
    s->run_command([s, req, ino, to_set, mode, uid, gid] {
      if (std::optional<int64_t> done = s->already_applied()) {
        Result<fs::Attr> a = s->fs.getattr(ino);
        if (*done < 0 || !a.ok()) {
          fuse_reply_err(req, *done < 0 ? static_cast<int>(-*done) : errno_of(a.error()));
          return;
        }
        struct stat st;
        fill_stat(*a, &st);
        fuse_reply_attr(req, &st, s->settings.attr_timeout_s);
        return;
      }
      if (!s->prepared(req)) return;
      Result<fs::Attr> r = s->fs.setattr(ino, (to_set & FUSE_SET_ATTR_MODE) ? &mode : nullptr,
                                         (to_set & FUSE_SET_ATTR_UID) ? &uid : nullptr,
                                         (to_set & FUSE_SET_ATTR_GID) ? &gid : nullptr);
      const int c = s->committed(r.ok() ? 0 : -errno_of(r.error()));
      if (!r.ok()) {
        fuse_reply_err(req, errno_of(r.error()));
        return;
      }
      if (c != 0) {
        fuse_reply_err(req, c);
        return;
      }
      struct stat st;
      fill_stat(*r, &st);
      fuse_reply_attr(req, &st, s->settings.attr_timeout_s);
    });
  }

  static void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
    fuse_reply_err(req, EPERM);
  }

  static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    Impl* s = self(req);
    s->run_command([s, req, parent, n = std::string(name), mode, c = caller(req)] {
      if (std::optional<int64_t> done = s->already_applied()) {
        Result<fs::Attr> a = s->fs.lookup(parent, n);
        if (*done < 0 || !a.ok()) {
          fuse_reply_err(req, *done < 0 ? static_cast<int>(-*done) : errno_of(a.error()));
          return;
        }
        s->reply_entry(req, parent, *a);
        return;
      }
      if (!s->prepared(req)) return;
      Result<fs::Attr> r = s->fs.mkdir(parent, n, mode & 07777, c);
      const int jerr = s->committed(r.ok() ? 0 : -errno_of(r.error()));
      if (!r.ok()) {
        fuse_reply_err(req, errno_of(r.error()));
        return;
      }
      if (jerr != 0) {
        // The kernel never learns of the entry: drop fs/'s reference.
        s->fs.forget(r->ino, 1);
        fuse_reply_err(req, jerr);
        return;
      }
      s->reply_entry(req, parent, *r);
    });
  }

  static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    Result<void> r = self(req)->fs.unlink(parent, name);
    fuse_reply_err(req, r.ok() ? 0 : errno_of(r.error()));
  }

  static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    Impl* s = self(req);
    s->run_command([s, req, parent, n = std::string(name)] {
      if (std::optional<int64_t> done = s->already_applied()) {
        fuse_reply_err(req, *done < 0 ? static_cast<int>(-*done) : 0);
        return;
      }
      if (!s->prepared(req)) return;
      Result<void> r = s->fs.rmdir(parent, n);
      const int c = s->committed(r.ok() ? 0 : -errno_of(r.error()));
      fuse_reply_err(req, r.ok() ? c : errno_of(r.error()));
    });
  }

  static void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) {
    fuse_reply_err(req, EPERM);
  }

  // kernfs has no rename2 flags (RENAME_NOREPLACE, EXCHANGE, WHITEOUT).
  static void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                        const char* newname, unsigned int flags) {
    if (flags != 0) {
      fuse_reply_err(req, EINVAL);
      return;
    }
    Impl* s = self(req);
    s->run_command([s, req, parent, n = std::string(name), newparent, nn = std::string(newname)] {
      if (std::optional<int64_t> done = s->already_applied()) {
        fuse_reply_err(req, *done < 0 ? static_cast<int>(-*done) : 0);
        return;
      }
      if (!s->prepared(req)) return;
      Result<void> r = s->fs.rename(parent, n, newparent, nn, 0);
      const int c = s->committed(r.ok() ? 0 : -errno_of(r.error()));
      fuse_reply_err(req, r.ok() ? c : errno_of(r.error()));
    });
  }

  static void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
    fuse_reply_err(req, EPERM);
  }

  // Opens through fs/ and fills the handle; shared by open and create.
  Result<uint64_t> do_open(fs::Ino ino, int flags, const fs::Caller& c, fuse_file_info* fi) {
    Result<fs::OpenFile> r = fs.open(ino, flags, c);
    if (!r.ok()) return std::move(r).error();
    const uint64_t fh = add_handle(std::make_unique<Handle>(Handle{std::move(r).value(), nullptr}));
    fi->fh = fh;
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->nonseekable = 0;
    return fh;
  }

  static void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Impl* s = self(req);
    Result<uint64_t> h = s->do_open(ino, fi->flags, caller(req), fi);
    if (!h.ok()) {
      fuse_reply_err(req, errno_of(h.error()));
      return;
    }
    // A failed reply means the open was interrupted: no RELEASE will come.
    if (fuse_reply_open(req, fi) != 0) s->drop_handle(*h);
  }

  static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    Impl* s = self(req);
    Result<Handle*> hr = s->handle_for(fi->fh, ino, fi->flags);
    if (!hr.ok()) {
      fuse_reply_err(req, errno_of(hr.error()));
      return;
    }
    Handle* h = *hr;
    if (!h->file.readable) {
      fuse_reply_err(req, EBADF);
      return;
    }
    // A file that reads registers is read where commands run (its RELEASE
    // is queued there too, so the handle outlives every queued read).
    if (h->file.reads_hardware) {
      const fs::Caller c = caller(req);
      s->run_command([s, req, h, size, off, c] { s->read_handle(req, h, size, off, c); });
      return;
    }
    s->read_handle(req, h, size, off, caller(req));
  }

  void read_handle(fuse_req_t req, Handle* h, size_t size, off_t off, const fs::Caller& c) {
    Impl* s = this;
    // seq_file generates the contents at the first read of an fd and again
    // whenever a read starts over at offset 0; later reads continue that
    // rendering. A failed rendering fails the read and leaves the next read
    // to try again.
    if (h->content == nullptr || off == 0) {
      Result<std::shared_ptr<const std::string>> r = s->fs.render_shared(h->file.ino, c);
      if (!r.ok()) {
        h->content = nullptr;
        fuse_reply_err(req, errno_of(r.error()));
        return;
      }
      h->content = std::move(r).value();
    }
    const std::string& snap = *h->content;
    if (off < 0 || static_cast<uint64_t>(off) >= snap.size()) {
      fuse_reply_buf(req, nullptr, 0);
      return;
    }
    const size_t n = std::min(size, snap.size() - static_cast<size_t>(off));
    fuse_reply_buf(req, snap.data() + off, n);
  }

  // The file is the request's node id: a handle a predecessor gave out
  // writes like one of ours.
  static void op_write(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t /*off*/,
                       fuse_file_info* /*fi*/) {
    if (size > fs::kMaxWriteBytes) {
      fuse_reply_err(req, E2BIG);
      return;
    }
    Impl* s = self(req);
    // The data lives in the session's buffer, which the next request reuses.
    s->run_command([s, req, ino = fs::Ino{ino}, d = std::string(data, size), c = caller(req)] {
      if (std::optional<int64_t> done = s->already_applied()) {
        if (*done < 0) {
          fuse_reply_err(req, static_cast<int>(-*done));
        } else {
          fuse_reply_write(req, static_cast<size_t>(*done));
        }
        return;
      }
      if (!s->prepared(req)) return;
      Result<size_t> r = s->fs.write(ino, d, c);
      // Also after a failure: what a tasks or channels write moved
      // before its bad id stays moved, as in the kernel.
      const int jerr = s->committed(r.ok() ? static_cast<int64_t>(*r) : -errno_of(r.error()));
      if (!r.ok()) {
        fuse_reply_err(req, errno_of(r.error()));
        return;
      }
      if (jerr != 0) {
        fuse_reply_err(req, jerr);
        return;
      }
      if (s->write_reply_hook) s->write_reply_hook();
      fuse_reply_write(req, *r);
    });
  }

  static void op_release(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
    Impl* s = self(req);
    const uint64_t fh = fi->fh;
    Handle* h = s->find_handle(fh);
    // A read of a register-reading file may still be queued or running on
    // the command thread (the kernel sends RELEASE without waiting for a
    // read whose caller was interrupted or killed): free the handle after
    // it, on the same thread, in queue order.
    if (h != nullptr && h->file.reads_hardware) {
      s->run_command([s, req, fh] {
        s->drop_handle(fh);
        fuse_reply_err(req, 0);
      });
      return;
    }
    s->drop_handle(fh);
    fuse_reply_err(req, 0);
  }

  static void op_opendir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
    Impl* s = self(req);
    if (s->no_opendir) {
      // Success without a message: the kernel opens directories itself from
      // now on and serves repeated listings from its cache.
      fuse_reply_err(req, ENOSYS);
      return;
    }
    fi->fh = 0;
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
  }

  // Lists "." and ".." and fs/'s entries; the entry at index i has offset
  // i + 1, so a listing continued over several READDIR requests resumes at
  // the right place.
  static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         fuse_file_info* /*fi*/) {
    Impl* s = self(req);
    Result<std::vector<fs::DirEntry>> r = s->fs.readdir(ino);
    if (!r.ok()) {
      fuse_reply_err(req, errno_of(r.error()));
      return;
    }
    std::string out(size, '\0');
    size_t used = 0;
    const size_t total = r->size() + 2;
    for (size_t i = off < 0 ? 0 : static_cast<size_t>(off); i < total; ++i) {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      const char* name;
      if (i == 0) {
        name = ".";
        st.st_ino = ino;
        st.st_mode = S_IFDIR;
      } else if (i == 1) {
        name = "..";
        st.st_ino = s->parent_of(ino);
        st.st_mode = S_IFDIR;
      } else {
        const fs::DirEntry& e = (*r)[i - 2];
        name = e.name.c_str();
        st.st_ino = e.attr.ino;
        st.st_mode = e.attr.mode;
      }
      const size_t need = fuse_add_direntry(req, out.data() + used, size - used, name, &st,
                                            static_cast<off_t>(i + 1));
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, out.data(), used);
  }

  static void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

  static void op_statfs(fuse_req_t req, fuse_ino_t) {
    struct statvfs sv;
    std::memset(&sv, 0, sizeof(sv));
    sv.f_bsize = 4096;
    sv.f_frsize = 4096;
    sv.f_namemax = 255;
    fuse_reply_statfs(req, &sv);
  }

  static void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t /*mode*/,
                        fuse_file_info* fi) {
    Impl* s = self(req);
    Result<fs::Attr> attr = s->fs.create(parent, name);
    if (!attr.ok()) {
      fuse_reply_err(req, errno_of(attr.error()));
      return;
    }
    Result<uint64_t> h = s->do_open(attr->ino, fi->flags, caller(req), fi);
    if (!h.ok()) {
      fuse_reply_err(req, errno_of(h.error()));
      return;
    }
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    e.ino = attr->ino;
    e.generation = 1;
    fill_stat(*attr, &e.attr);
    e.attr_timeout = s->settings.attr_timeout_s;
    e.entry_timeout = s->settings.entry_timeout_s;
    if (fuse_reply_create(req, &e, fi) == 0) {
      s->remember(parent, *attr);
    } else {
      s->drop_handle(*h);
    }
  }

  // Designated initialisers, in the declaration order of fuse_lowlevel_ops.
  // Absent on purpose: flush (the kernel then never sends FLUSH), flock and
  // getlk/setlk (the kernel locks locally), readdirplus (it only helps cold
  // walks), write_buf (write gets the bytes in memory).
  static constexpr fuse_lowlevel_ops kOps = {
      .init = op_init,
      .lookup = op_lookup,
      .forget = op_forget,
      .getattr = op_getattr,
      .setattr = op_setattr,
      .mknod = op_mknod,
      .mkdir = op_mkdir,
      .unlink = op_unlink,
      .rmdir = op_rmdir,
      .symlink = op_symlink,
      .rename = op_rename,
      .link = op_link,
      .open = op_open,
      .read = op_read,
      .write = op_write,
      .release = op_release,
      .opendir = op_opendir,
      .readdir = op_readdir,
      .releasedir = op_releasedir,
      .statfs = op_statfs,
      .create = op_create,
      .forget_multi = op_forget_multi,
  };

  // ---- invalidation thread ----

  void inval_loop() {
    for (;;) {
      Invalidation item;
      {
        std::unique_lock<std::mutex> lock(inval_mu);
        inval_cv.wait(lock, [&] { return inval_stop || !inval_items.empty(); });
        if (inval_stop) return;
        item = std::move(inval_items.front());
        inval_items.pop_front();
        ++inval_busy;
      }
      int rc;
      if (item.kind == Invalidation::Kind::kEntry) {
        rc = fuse_lowlevel_notify_inval_entry(se, item.ino, item.name.c_str(), item.name.size());
        // The kernel drops its cached listing of the parent only when the
        // entry itself was cached; a name that appears for the first time
        // must reach the listing too, through the parent's page cache.
        const int rc_dir = fuse_lowlevel_notify_inval_inode(se, item.ino, 0, 0);
        if (rc == -ENOENT) rc = rc_dir;
      } else {
        rc = fuse_lowlevel_notify_inval_inode(se, item.ino, 0, 0);
      }
      // ENOENT: the kernel does not have it cached, nothing to drop.
      if (rc != 0 && rc != -ENOENT) {
        spdlog::debug("invalidation of inode {} failed: {}", item.ino, strerror(-rc));
      }
      {
        std::lock_guard<std::mutex> lock(inval_mu);
        --inval_busy;
      }
      inval_cv.notify_all();
    }
  }

  void stop_inval_thread() {
    {
      std::lock_guard<std::mutex> lock(inval_mu);
      inval_stop = true;
      inval_items.clear();
    }
    inval_cv.notify_all();
    if (inval_thread.joinable()) inval_thread.join();
  }
};

FuseBridge::FuseBridge(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FuseBridge::~FuseBridge() {
  impl_->stop_inval_thread();
  if (impl_->se != nullptr) {
    unmount();
    fuse_session_destroy(impl_->se);
  }
  std::free(impl_->buf.mem);
}

Result<std::unique_ptr<FuseBridge>> FuseBridge::create(fs::Filesystem& fs, RequestStats& stats,
                                                       const FuseSettings& settings) {
  auto impl = std::make_unique<Impl>(fs, stats, settings);
  uint32_t prefix = 0;
  while ((prefix & 0xffffff) == 0) {
    if (getrandom(&prefix, sizeof(prefix), 0) != static_cast<ssize_t>(sizeof(prefix)))
      prefix = static_cast<uint32_t>(getpid()) ^ static_cast<uint32_t>(time(nullptr));
  }
  impl->handle_prefix = uint64_t{prefix & 0xffffff} << 40;
  for (const std::string& o : settings.fuse_options) {
    if (o.rfind("max_read=", 0) == 0)
      impl->max_read = static_cast<unsigned>(std::strtoul(o.c_str() + 9, nullptr, 0));
  }
  const std::string opts = session_options(settings);
  impl->se = new_session(opts, &Impl::kOps, sizeof(Impl::kOps), impl.get());
  if (impl->se == nullptr) {
    return Error::make(EINVAL, "libfuse refused the FUSE options '" + opts + "'");
  }
  auto bridge = std::unique_ptr<FuseBridge>(new FuseBridge(std::move(impl)));
  Impl* raw = bridge->impl_.get();
  raw->inval_thread = std::thread([raw] { raw->inval_loop(); });
  return bridge;
}

Result<void> FuseBridge::mount() {
  if (fuse_session_mount(impl_->se, impl_->settings.mountpoint.c_str()) != 0) {
    return Error::make(EIO, "cannot mount FUSE at " + impl_->settings.mountpoint);
  }
  impl_->mounted = true;
  return Ok();
}

int FuseBridge::fd() const { return fuse_session_fd(impl_->se); }

Result<int> FuseBridge::mount_connection(const FuseSettings& settings) {
  // A session that only mounts: libfuse builds the mount(2) options
  // exactly as for mount(); the mount stays when the session goes.
  static const fuse_lowlevel_ops kNoOps{};
  const std::string opts = session_options(settings);
  fuse_session* se = new_session(opts, &kNoOps, sizeof(kNoOps), nullptr);
  if (se == nullptr) return Error::make(EINVAL, "libfuse refused the FUSE options '" + opts + "'");
  if (fuse_session_mount(se, settings.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    return Error::make(EIO, "cannot mount FUSE at " + settings.mountpoint);
  }
  const int fd = fcntl(fuse_session_fd(se), F_DUPFD_CLOEXEC, 3);
  const int err = errno;
  if (fd < 0) {
    fuse_session_destroy(se);
    (void)umount2(settings.mountpoint.c_str(), MNT_DETACH);
    return Error::make(err, std::string("dup of /dev/fuse: ") + strerror(err));
  }
  // Kept, not destroyed: libfuse frees the mount point it keeps only in
  // fuse_session_unmount, which would unmount. One per process (the
  // keeper's mount, or --fd-store's).
  // A plain pointer (no destructor at exit): reachable, not a leak.
  static fuse_session* mount_session = nullptr;
  if (mount_session != nullptr) fuse_session_destroy(mount_session);  // not the mount
  mount_session = se;
  return fd;
}

Result<void> FuseBridge::adopt(int fd, const std::string& init_file, bool takeover) {
  Impl& s = *impl_;
  s.init_file = init_file;
  s.takeover = takeover;
  if (takeover) {
    std::string text;
    if (!read_file(init_file, text) || !decode_init(text, s.init_req, s.init_reply)) {
      ::close(fd);
      return Error::make(EIO, "no FUSE INIT kept in " + init_file +
                                  ": this connection cannot be taken over (unmount it and "
                                  "start again)");
    }
    fuse_in_header h;
    std::memcpy(&h, s.init_req.data(), sizeof(h));
    s.init_unique = h.unique;
  }
  if (fuse_session_custom_io(s.se, &Impl::kIo, fd) != 0) {
    ::close(fd);
    return Error::make(EIO, "libfuse refused the FUSE connection's descriptor");
  }
  s.adopted = true;
  s.mounted = true;
  if (!takeover) return Ok();
  // libfuse takes the kept INIT now (the descriptor is not readable for
  // it); its reply is swallowed by io_writev.
  s.init_state = Impl::kInitFeed;
  const int n = fuse_session_receive_buf(s.se, &s.buf);
  if (n <= 0) return Error::make(EIO, "libfuse did not take the kept INIT");
  fuse_session_process_buf(s.se, &s.buf);
  if (s.init_state.load() != Impl::kInitDone)
    return Error::make(EIO, "libfuse refused the kept INIT");
  // The requests the dead daemon had read and not answered go back to the
  // kernel's queue, marked FUSE_UNIQUE_RESEND.
  const fuse_out_header resend{sizeof(fuse_out_header), kFuseNotifyResend, 0};
  if (::write(fd, &resend, sizeof(resend)) != static_cast<ssize_t>(sizeof(resend))) {
    s.resend_refused = true;
    spdlog::warn(
        "takeover: the kernel refused FUSE_NOTIFY_RESEND ({}): it is older than Linux 6.9, so "
        "requests the dead daemon had read are not answered",
        strerror(errno));
  }
  return Ok();
}

uint64_t FuseBridge::current_unique() { return tl_unique & ~kFuseUniqueResend; }

bool FuseBridge::current_is_resend() { return (tl_unique & kFuseUniqueResend) != 0; }

int64_t FuseBridge::current_result() { return tl_result; }

void FuseBridge::set_applied_hook(std::function<std::optional<int64_t>(uint64_t)> hook) {
  impl_->applied_hook = std::move(hook);
}

void FuseBridge::set_request_hook(std::function<void(uint32_t)> hook) {
  impl_->hook = std::move(hook);
}

void FuseBridge::set_prepare_hook(std::function<Result<void>()> hook) {
  impl_->prepare_hook = std::move(hook);
}

void FuseBridge::set_commit_hook(std::function<Result<void>()> hook) {
  impl_->commit_hook = std::move(hook);
}

void FuseBridge::set_write_reply_hook(std::function<void()> hook) {
  impl_->write_reply_hook = std::move(hook);
}

void FuseBridge::set_command_runner(std::function<void(std::function<void()>)> runner) {
  impl_->runner = std::move(runner);
}

FuseBridge::Step FuseBridge::process_one() {
  fuse_session* se = impl_->se;
  if (fuse_session_exited(se)) return Step::kEnded;
  const int n = fuse_session_receive_buf(se, &impl_->buf);
  if (n == -EINTR || n == -EAGAIN) return Step::kAgain;
  if (n <= 0) {
    if (n < 0) spdlog::error("reading /dev/fuse: {}", strerror(-n));
    return Step::kEnded;
  }
  const fuse_buf& b = impl_->buf;
  uint32_t opcode = 0;
  impl_->dispatching_unique = 0;
  if (!(b.flags & FUSE_BUF_IS_FD) && static_cast<size_t>(n) >= sizeof(fuse_in_header)) {
    std::memcpy(&opcode, static_cast<const char*>(b.mem) + offsetof(fuse_in_header, opcode),
                sizeof(opcode));
    std::memcpy(&impl_->dispatching_unique,
                static_cast<const char*>(b.mem) + offsetof(fuse_in_header, unique),
                sizeof(uint64_t));
  }
  impl_->stats.count(opcode);
  if (impl_->hook) impl_->hook(opcode);
  fuse_session_process_buf(se, &impl_->buf);
  return fuse_session_exited(se) ? Step::kEnded : Step::kProcessed;
}

void FuseBridge::post_invalidations(std::vector<Invalidation> items) {
  if (items.empty()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->inval_mu);
    if (impl_->inval_stop) return;
    for (Invalidation& i : items) impl_->inval_items.push_back(std::move(i));
  }
  impl_->inval_cv.notify_all();
  // Wait (briefly) until the kernel knows, so that the next request of the
  // client that caused the change already sees it. The bound keeps a
  // notification stuck behind another process's pending request (which
  // only this thread can serve) from stalling the daemon.
  std::unique_lock<std::mutex> lock(impl_->inval_mu);
  impl_->inval_cv.wait_for(lock, kInvalidationWait, [&] {
    return impl_->inval_stop || (impl_->inval_items.empty() && impl_->inval_busy == 0);
  });
}

void FuseBridge::unmount() {
  if (!impl_->mounted) return;
  impl_->stop_inval_thread();
  impl_->mounted = false;
  if (impl_->adopted) {
    // libfuse did not mount it and does not know where it is.
    if (umount2(impl_->settings.mountpoint.c_str(), MNT_DETACH) != 0 && errno != EINVAL &&
        errno != ENOENT)
      spdlog::warn("unmounting {}: {}", impl_->settings.mountpoint, strerror(errno));
    return;
  }
  fuse_session_unmount(impl_->se);
}

}  // namespace resctrlfs::daemon

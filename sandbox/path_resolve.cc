// Implements resolve_in_view of path_resolve.h.
#include "sandbox/path_resolve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <deque>

namespace resctrlfs::sandbox {
namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's limit per lookup

Error errno_error(int e) { return Error::make(e, ""); }

bool same_inode(int a, int b) {
  struct stat sa, sb;
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool on_procfs(int fd) {
  struct statfs sf;
  return ::fstatfs(fd, &sf) == 0 && sf.f_type == kProcSuperMagic;
}

// Puts the components of `path` in front of `todo`, in order.
void push_front_components(std::deque<std::string>& todo, std::string_view path) {
  std::deque<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  todo.insert(todo.begin(), parts.begin(), parts.end());
}

Result<std::string> read_link(int fd) {
  std::string buf(256, '\0');
  while (true) {
    ssize_t n = ::readlinkat(fd, "", buf.data(), buf.size());
    if (n < 0) return errno_error(errno);
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    if (buf.size() >= 65536) return errno_error(ENAMETOOLONG);
    buf.resize(buf.size() * 2);
  }
}

Result<UniqueFd> dup_fd(int fd) {
  int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return errno_error(errno);
  return UniqueFd(d);
}

}  // namespace

bool is_procfs_root(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 && st.st_ino == 1 && S_ISDIR(st.st_mode) && on_procfs(fd);
}

Result<Resolved> resolve_in_view(const ProcessView& view, int start_fd, std::string_view path,
                                 const ResolveOptions& opts) {
  if (path.empty()) return errno_error(ENOENT);
  const int root = opts.root_is_start ? start_fd : view.root_fd;
  bool absolute = path.front() == '/';
  RESCTRLFS_ASSIGN_OR_RETURN(UniqueFd cur, dup_fd(absolute ? root : start_fd));
  UniqueFd parent;
  std::string name = absolute ? "/" : ".";
  std::deque<std::string> todo;
  push_front_components(todo, path);
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    bool last = todo.empty();
    if (c == ".") {
      if (last) {
        RESCTRLFS_ASSIGN_OR_RETURN(parent, dup_fd(cur.get()));
        name = c;
      }
      continue;
    }
    if (c == "..") {
      if (!same_inode(cur.get(), root)) {
        int up = ::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (up < 0) return errno_error(errno);
        parent = std::move(cur);
        cur.reset(up);
      }
      name = c;
      continue;
    }
    if ((c == "self" || c == "thread-self") && is_procfs_root(cur.get())) {
      // Who looks decides what these name: the traced process, not us.
      std::string ids = std::to_string(view.tgid);
      if (c == "thread-self") ids += "/task/" + std::to_string(view.tid);
      push_front_components(todo, ids);
      continue;
    }
    int next = ::openat(cur.get(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return errno_error(errno);
    UniqueFd nfd(next);
    struct stat st;
    if (::fstat(nfd.get(), &st) != 0) return errno_error(errno);
    if (S_ISLNK(st.st_mode) && (!last || opts.follow_last)) {
      if (opts.no_symlinks) return errno_error(ELOOP);
      if (++links > kMaxSymlinks) return errno_error(ELOOP);
      if (on_procfs(cur.get()) && !is_procfs_root(cur.get())) {
        // A per-process magic link (fd/N, cwd, root, exe, ns/...): its
        // text need not resolve anywhere; the kernel jumps to the object.
        if (opts.no_magiclinks) return errno_error(ELOOP);
        int target = ::openat(cur.get(), c.c_str(), O_PATH | O_CLOEXEC);
        if (target < 0) return errno_error(errno);
        parent = std::move(cur);
        cur.reset(target);
        name = c;
        continue;
      }
      RESCTRLFS_ASSIGN_OR_RETURN(std::string text, read_link(nfd.get()));
      if (text.empty()) return errno_error(ENOENT);
      if (text.front() == '/') {
        RESCTRLFS_ASSIGN_OR_RETURN(cur, dup_fd(root));
        name = "/";
      }
      push_front_components(todo, text);
      continue;
    }
    if (!last && !S_ISDIR(st.st_mode)) return errno_error(ENOTDIR);
    parent = std::move(cur);
    cur = std::move(nfd);
    name = c;
  }
  if (!parent.valid()) {
    // The path named its start or root (`/`, `.`): its parent is itself.
    RESCTRLFS_ASSIGN_OR_RETURN(parent, dup_fd(cur.get()));
  }
  Resolved r;
  r.fd = std::move(cur);
  r.parent_fd = std::move(parent);
  r.name = std::move(name);
  return r;
}

}  // namespace resctrlfs::sandbox

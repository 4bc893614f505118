// Linked into the release archive's programs (RESCTRLFS_PORTABLE with
// RESCTRLFS_GLIBC_SYSROOT): what the build machine's libstdc++.a and
// libgcc_eh.a, built against a newer glibc, use and glibc 2.31 (Debian 11)
// does not export. Defined here, in the program, they need no symbol
// version newer than 2.31 (packaging/portable_check.sh checks that none is).
#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>

#include <cstdint>

extern "C" {

// glibc >= 2.32: nonzero while the process has a single thread, read by
// libstdc++ to skip atomic operations on reference counts. 0 means "there
// may be other threads", which is always correct: atomics are always used.
char __libc_single_threaded = 0;

// glibc >= 2.36, used by libstdc++'s std::random_device: 32 random bits
// from the kernel (getrandom(2), glibc 2.25).
uint32_t arc4random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
  }
  return v;
}

// glibc >= 2.35, used by libgcc's unwinder to find the unwind tables of the
// object holding `pc` while an exception propagates. The same answer from
// dl_iterate_phdr (what the unwinder used before 2.35): the object whose
// PT_LOAD segment holds pc, its extent and its PT_GNU_EH_FRAME.
int _dl_find_object(void* pc, struct dl_find_object* result) {
  struct Search {
    uintptr_t pc;
    dl_find_object* out;
    bool found;
  } s{reinterpret_cast<uintptr_t>(pc), result, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            lo = start < lo ? start : lo;
            hi = start + ph.p_memsz > hi ? start + ph.p_memsz : hi;
            holds = holds || (s->pc >= start && s->pc < start + ph.p_memsz);
          } else if (ph.p_type == PT_GNU_EH_FRAME) {
            eh = start;
          }
        }
        if (!holds) return 0;
        s->out->dlfo_flags = 0;
        s->out->dlfo_map_start = reinterpret_cast<void*>(lo);
        s->out->dlfo_map_end = reinterpret_cast<void*>(hi);
        s->out->dlfo_link_map = nullptr;
        s->out->dlfo_eh_frame = reinterpret_cast<void*>(eh);
        s->found = true;
        return 1;
      },
      &s);
  return s.found ? 0 : -1;
}

}  // extern "C"

// Linked into the release archive's programs (RESCTRLFS_PORTABLE with
// RESCTRLFS_GLIBC_SYSROOT): what the build machine's libstdc++.a and
// libgcc_eh.a, built against a newer glibc, use and glibc 2.31 (Debian 11)
// does not export. Defined here, in the program, they need no symbol
// version newer than 2.31 (packaging.portable_deps checks that none is).

extern "C" {

// glibc >= 2.32: nonzero while the process has a single thread, read by
// libstdc++ to skip atomic operations on reference counts. 0 means "there
// may be other threads", which is always correct: atomics are always used.
char __libc_single_threaded = 0;

}  // extern "C"

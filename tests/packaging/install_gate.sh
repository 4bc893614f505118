#!/bin/sh
# Runs COMMAND... only when RESCTRLFS_INSTALL_TESTS=1 (the install tests
# take minutes: tests/README.md); otherwise exits 77, ctest's Skipped.
if [ "${RESCTRLFS_INSTALL_TESTS:-}" != 1 ]; then
  echo "SKIPPED: the install tests run only with RESCTRLFS_INSTALL_TESTS=1 (tests/ci.sh's install stage)" >&2
  exit 77
fi
exec "$@"

#!/usr/bin/env bash
# Every Catch2 test case is registered with ctest by Catch2's discovery
# (catch_discover_tests), which passes the test case's name to the test
# executable as its test spec. A name that starts with '-' is read as an
# option there, and a ';' splits it into two CMake list items: either would
# register a ctest entry that does not run the test case. This refuses both.
# Arguments: the test executables.
set -euo pipefail
bad=0
for exe in "$@"; do
  while IFS= read -r name; do
    case "$name" in
      -* | *\;*)
        echo "$(basename "$exe"): test case name \"$name\" starts with '-' or holds ';'" >&2
        bad=1
        ;;
    esac
  done < <("$exe" --list-test-names-only || true)
done
if [ "$bad" = 1 ]; then exit 1; fi
echo "checked the test case names of $# Catch2 executables"

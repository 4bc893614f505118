#!/usr/bin/env bash
# Every pointer in the repository leads somewhere a reader can follow: no
# tracked file names a document that is not in the repository (the design
# notes' shared/reference/..., seeds/, their "§N" sections) or an issue
# number of the tracker ("issue 12", "Issue #3"). Say the fact in place, or
# cite the kernel documentation (Documentation/filesystems/resctrl.rst
# section), the Intel SDM / AMD manual by name, or this repository's docs.
set -euo pipefail
cd "$(dirname "$0")/../.."
self="tests/base/refs_rule.sh"
pattern='shared/reference|seeds/|seed-[a-z0-9-]*\.md|resctrl-behaviour\.md|performance\.md|clients\.md|§|[Ii]ssue #?[0-9]'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files | grep -vxF "$self")
else
  mapfile -t files < <(find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||' |
    grep -vxF "$self")
fi
hits=""
if [ "${#files[@]}" -gt 0 ]; then
  hits="$(printf '%s\0' "${files[@]}" | xargs -0 grep -InE "$pattern" -- 2>/dev/null || true)"
fi
if [ -n "$hits" ]; then
  echo "refs rule: pointers to documents or issues outside the repository:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "refs rule: no pointers outside the repository in ${#files[@]} files"

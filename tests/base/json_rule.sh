#!/usr/bin/env bash
# The outside-JSON rule of base/json_input.h, checked on the sources: JSON
# text is parsed only by parse_json() (never json::parse, which throws or,
# without exceptions, has no depth limit), and no value is read with
# json::value("key", default), which throws when the key holds another type.
# Tests may build documents as they like; product code may not.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0
dirs=(base daemon fs hw sandbox schemata bench)
check() {
  local what="$1" pattern="$2" hits
  hits="$(grep -rnE --include='*.cc' --include='*.h' "$pattern" "${dirs[@]}" |
    grep -v '^base/json_input\.h:' || true)"
  if [ -n "$hits" ]; then
    echo "json rule: $what (see base/json_input.h):" >&2
    echo "$hits" >&2
    status=1
  fi
}
check "json::parse outside parse_json()" 'json::parse\('
check "json::value(key, default) on a document" '\.value\("[^"]*", '
[ "$status" = 0 ] && echo "json rule: no json::parse or json::value(key, default) in ${dirs[*]}"
exit "$status"

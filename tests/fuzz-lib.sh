# Shared by the fuzz stage of tests/ci.sh (every target of
# tests/schemata and tests/reliability/fuzz); sourced, not run. Each libFuzzer target is
# run in two steps:
#
#   fuzz_replay   every checked-in corpus file, one by one, as a
#                 deterministic regression test: libFuzzer given files (not
#                 a directory) runs each exactly once and mutates nothing,
#                 so an input that once crashed fails every run;
#   fuzz_explore  then the bounded exploration on a scratch copy of the
#                 corpus, as before.
#
# A failure in either prints the input (path and hex dump) into the log, so
# that CI's log alone is enough to add it to the corpus:
#     xxd -r -p > tests/.../corpus/<target>/<name>   (paste the hex lines)
# Both print libFuzzer's stat lines (executions, seconds) when they pass.

# Hex of one input, at most 64 KiB (bigger inputs are named only).
fuzz_print_input() {
  local f="$1" size
  size="$(stat -c %s "$f")"
  echo "---- reproducer $f ($size bytes), hex (xxd -p style; xxd -r -p turns it back):"
  if [ "$size" -le 65536 ]; then
    od -An -v -tx1 "$f" | tr -d ' \n' | fold -w 64
    echo
  else
    echo "(larger than 64 KiB: not printed; take it from the artifacts)"
  fi
}

# fuzz_replay NAME BIN CORPUS_DIR LOG: runs every file of CORPUS_DIR once.
fuzz_replay() {
  local name="$1" bin="$2" corpus="$3" log="$4" files=()
  mapfile -d '' files < <(find "$corpus" -type f -print0 | sort -z)
  if [ "${#files[@]}" -eq 0 ]; then
    echo "== $name: no corpus files in $corpus" >&2
    return 1
  fi
  echo "== $name: replaying ${#files[@]} corpus files"
  local start=$SECONDS
  # One process per batch keeps the log readable; libFuzzer stops at the
  # first input that fails and names it ("Running: <file>").
  if ! "$bin" -timeout=10 -rss_limit_mb=2048 "${files[@]}" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    local bad
    bad="$(grep -E '^Running: ' "$log" | tail -n 1 | sed 's/^Running: //')"
    echo "== $name: FAILED on a checked-in corpus file: ${bad:-unknown}" >&2
    [ -n "$bad" ] && [ -f "$bad" ] && fuzz_print_input "$bad" >&2
    return 1
  fi
  local ran
  ran="$(grep -c -E '^Executed ' "$log" || true)"
  echo "== $name: replay passed (${ran} inputs, $((SECONDS - start)) s)"
}

# fuzz_explore NAME BIN CORPUS_DIR WORK_DIR ARTIFACTS_DIR SECONDS LOG
fuzz_explore() {
  local name="$1" bin="$2" corpus="$3" work="$4" artifacts="$5" seconds="$6" log="$7"
  mkdir -p "$work" "$artifacts"
  cp -r "$corpus"/. "$work"/
  local before
  before="$(mktemp)"
  ls -1 "$artifacts" >"$before" 2>/dev/null || true
  echo "== $name: fuzzing for ${seconds}s ($(find "$work" -type f | wc -l) seeds)"
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
    echo "== $name: no crash in ${seconds}s"
    rm -f "$before"
    return 0
  fi
  tail -n 60 "$log" >&2
  echo "== $name: FAILED; reproducers in $artifacts" >&2
  local f
  while IFS= read -r f; do
    grep -qxF "$f" "$before" || fuzz_print_input "$artifacts/$f" >&2
  done < <(ls -1 "$artifacts")
  rm -f "$before"
  return 1
}

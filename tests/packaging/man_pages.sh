#!/bin/bash
# The man pages (docs/man/*.scd, built by scdoc into MAN_DIR) are clean and
# complete:
#  - each renders without a warning: `groff -ww -man -Tutf8 -z` prints
#    nothing;
#  - every long option that a program's --help prints (for resctrlfsctl:
#    its own and each subcommand's, at every level) heads an entry of that
#    program's page (a line that starts with it, after "-x, " or another
#    option and ", " if any: a mention in passing is not documentation), and
#    every resctrlfsctl subcommand ("status", "clock
#    advance", ...) heads an entry of its page (a line starting with it), so
#    an option or a subcommand added without documentation fails here;
#  - each of our pages that a page refers to (NAME(N)) exists.
# usage: man_pages.sh MAN_DIR PROGRAM...
# Exit 77 (Skipped) when MAN_DIR holds no page (scdoc was missing when the
# tree was configured: docs/man/CMakeLists.txt says so).
set -uo pipefail
man_dir=$1
shift
if ! ls "$man_dir"/*.[1-8] >/dev/null 2>&1; then
  echo "SKIPPED: no man pages in $man_dir: scdoc was missing when the tree was configured" \
    "(apt-get install scdoc, then configure again), or the target man was not built" >&2
  exit 77
fi
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# The page as text: ASCII (a hyphen stays '-'), no overstrikes or colours,
# lines long enough that nothing of interest is broken.
render() { groff -man -Tascii -P-cbou -rLL=300n "$1" 2>/dev/null; }

# The long options a --help text names.
long_options() { grep -oE -- '--[A-Za-z0-9][A-Za-z0-9-]*' | sort -u; }

# The subcommand names of a CLI11 --help text (the "SUBCOMMANDS:" or
# "Subcommands:" section: "  name   description").
subcommands() {
  awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && /^[^ ]/ {on=0} on && NF {print $1}'
}

for page in "$man_dir"/*.[1-8]; do
  warnings=$(groff -ww -man -Tutf8 -z "$page" 2>&1)
  [ -z "$warnings" ] || bad "$(basename "$page"): groff -ww warns: $warnings"
  for ref in $(render "$page" | grep -oE '(resctrl[a-z-]*)\([1-8]\)' | sort -u); do
    name=${ref%(*} sec=${ref##*(}
    sec=${sec%)}
    [ -f "$man_dir/$name.$sec" ] || bad "$(basename "$page") refers to $ref, which is not a page of ours"
  done
done

for prog in "$@"; do
  name=$(basename "$prog")
  page=$(ls "$man_dir/$name".[1-8] 2>/dev/null | head -1)
  if [ -z "$page" ]; then
    bad "$name has no man page (docs/man/$name.N.scd)"
    continue
  fi
  text=$(render "$page")
  help=$("$prog" --help 2>&1) || bad "$name --help failed"
  # For resctrlfsctl, every subcommand path, breadth first.
  paths=("")
  declare -A helps=(["_"]="$help")
  i=0
  while [ $i -lt ${#paths[@]} ]; do
    p=${paths[$i]}
    i=$((i + 1))
    for sub in $(printf '%s\n' "${helps[_$p]}" | subcommands); do
      q=${p:+$p }$sub
      # shellcheck disable=SC2086
      helps[_$q]=$("$prog" $q --help 2>&1) || bad "$name $q --help failed"
      paths+=("$q")
      if ! grep -qE "^ +$q( |\$)" <<<"$text"; then
        bad "$name's page has no entry for the subcommand '$q' (a line starting with it)"
      fi
    done
  done
  n=0
  for p in "${paths[@]}"; do
    for opt in $(printf '%s\n' "${helps[_$p]}" | long_options); do
      n=$((n + 1))
      if ! grep -qE -- "^ +(-[A-Za-z0-9-]+, )*$opt([ ,=]|\$)" <<<"$text"; then
        bad "$(basename "$page") has no entry for $opt (a line starting with it)," \
          "which \`$name${p:+ $p} --help\` lists"
      fi
    done
  done
  unset helps
  echo "checked $(basename "$page"): $n options, $((${#paths[@]} - 1)) subcommands"
done
[ $fail = 0 ] && echo "ok: the man pages render without warnings and document every option and subcommand"
exit $fail

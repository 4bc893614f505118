#!/bin/bash
# packaging/bash-completion/resctrlfs, sourced in bash with bash-completion
# as an interactive shell has it, completes what the programs accept:
#  - every long option a program's --help names is offered after "--"
#    (for resctrlfsctl: after each subcommand path too, and every
#    subcommand after its parent), so an option the completion cannot
#    offer fails here;
#  - `resctrlfsctl st<TAB>` offers status, `resctrlfsd --platform amd-<TAB>`
#    exactly the amd platforms `resctrlfsd --list-platforms` prints, the
#    sandbox the same names, a CLI11 choice list (--backend) its choices,
#    -o resctrl's mount options after a comma;
#  - the values it knows itself (the sandbox's --intercept modes, -o's
#    names) are ones the programs' --help texts name.
# usage: bash_completion.sh COMPLETION_FILE PROGRAM...
# The programs are found through PATH (their directories go first), as a
# user's shell finds them. Exit 77 (Skipped) without bash-completion.
set -uo pipefail
file=$1
shift
bc=/usr/share/bash-completion/bash_completion
if [ ! -f $bc ]; then
  echo "SKIPPED: $bc is missing (apt-get install bash-completion)" >&2
  exit 77
fi
for prog in "$@"; do PATH=$(cd "$(dirname "$prog")" && pwd):$PATH; done
export PATH
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# complete LINE: the completions bash offers for LINE (the cursor at its
# end), one a line, from a fresh shell that loaded bash-completion and the
# file.
complete_line() {
  bash --norc --noprofile -c '
    . "$1"
    . "$2"
    compopt() { :; }  # the options of a completion in progress; there is none here
    line=$3
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    spec=$(complete -p "${COMP_WORDS[0]}" 2>/dev/null) || { echo "no completion for ${COMP_WORDS[0]}" >&2; exit 1; }
    fn=$(sed -n "s/.*-F \([^ ]*\) .*/\1/p" <<<"$spec")
    prev=""
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "$prev"
    printf "%s\n" "${COMPREPLY[@]}"
  ' _ "$bc" "$file" "$1"
}

# expect LINE WORD...: completing LINE offers each WORD.
expect() {
  local line=$1 got w
  shift
  got=$(complete_line "$line") || { bad "completing '$line' failed"; return; }
  for w in "$@"; do
    grep -qxF -- "$w" <<<"$got" || bad "completing '$line' does not offer '$w' (offers: $(echo $got))"
  done
}

# exactly LINE WORD...: completing LINE offers exactly the WORDs.
exactly() {
  local line=$1 got want
  shift
  got=$(complete_line "$line" | sort)
  want=$(printf '%s\n' "$@" | sort)
  [ "$got" = "$want" ] || bad "completing '$line' offers '$(echo $got)', not '$(echo $want)'"
}

long_options() { grep -oE -- '--[A-Za-z0-9][A-Za-z0-9-]*' | sort -u; }
subcommands() {
  awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && /^[^ ]/ {on=0} on && NF {print $1}'
}

# Every program: every long option of its --help.
for prog in "$@"; do
  name=$(basename "$prog")
  help=$("$name" --help 2>&1)
  # shellcheck disable=SC2046
  expect "$name --" $(long_options <<<"$help")
done

# resctrlfsctl: every subcommand path, its subcommands and options.
paths=("")
i=0
while [ $i -lt ${#paths[@]} ]; do
  p=${paths[$i]}
  i=$((i + 1))
  # shellcheck disable=SC2086
  help=$(resctrlfsctl $p --help 2>&1)
  subs=$(subcommands <<<"$help")
  if [ -n "$subs" ]; then
    # shellcheck disable=SC2086
    expect "resctrlfsctl ${p:+$p }" $subs
    for s in $subs; do paths+=("${p:+$p }$s"); done
  fi
  # shellcheck disable=SC2046
  [ -n "$p" ] && expect "resctrlfsctl $p --" $(long_options <<<"$help")
done
echo "checked the options of $# programs and ${#paths[@]} resctrlfsctl command paths"

# A few completions as a user types them.
expect "resctrlfsctl st" status stats
exactly "resctrlfsctl clock mode " manual real
expect "resctrlfsctl stats " reset
# shellcheck disable=SC2046
exactly "resctrlfsd --platform amd-" $(resctrlfsd --list-platforms | grep '^amd-')
[ -n "$(resctrlfsd --list-platforms | grep '^amd-')" ] || bad "resctrlfsd --list-platforms lists no amd- platform"
# shellcheck disable=SC2046
exactly "resctrlfs-sandbox --platform intel-2" $(resctrlfs-sandbox --list-platforms | grep '^intel-2')
exactly "resctrlfsd --backend " sim msr
exactly "resctrlfsd --log-level w" warn
expect "resctrlfsd -o cdp,mba" cdp,mba_MBps
expect "resctrlfs-sandbox --backend " sim msr
expect "resctrlfs-sandbox -- " bash
exactly "resctrl-msrd --irdt-wide-bytes " 0 4 8

# The values the completion names itself are the programs' own.
sandbox_help=$(resctrlfs-sandbox --help)
for mode in all statfs-only none; do
  grep -qE -- "(^|[ (])$mode( |\$|,)" <<<"$sandbox_help" ||
    bad "the completion offers --intercept $mode, which resctrlfs-sandbox --help does not name"
done
o_help=$(resctrlfsd --help | grep -E '^ +-o ')
for o in cdp cdpl2 mba_MBps debug iordt cba stlb tccl3; do
  grep -qE "[ (]${o}[ ,)]" <<<"$o_help" ||
    bad "the completion offers -o $o, which resctrlfsd --help's -o line does not name"
done

[ $fail = 0 ] && echo "ok: the bash completion offers every option, subcommand and platform"
exit $fail

#!/usr/bin/env bash
# daemon/ and sandbox/ speak of platforms and backends, not of an
# architecture: the architectures live in hw/<arch>/ and reach these two
# directories only through hw/platform_factory.h (docs/architecture.md,
# "Adding an architecture"). Checked on the sources, case-insensitively,
# for the words msr, cpuid and x86 (in any identifier, comment or string):
#   - no code names them: no identifier, no type, no call (the build
#     host's own __x86_64__ aside, which selects an instruction of the
#     daemon's CRC-32C, not a platform);
#   - no comment names them;
#   - a string may, only in the files listed below: user-visible text the
#     tests pin byte for byte (option names and help, messages, report and
#     JSON wording), which stays as it was;
#   - nothing includes an architecture's directory (hw/x86, hw/sim,
#     hw/real, hw/broker), but for the includes listed below.
# The check first proves on a sample that it catches each kind.
set -euo pipefail
cd "$(dirname "$0")/../.."

# file: why its strings may name an architecture.
strings_allowed=(
  daemon/options.cc         # resctrlfsd's option names and --help (--backend msr, --rdt-from-cpuid)
  daemon/option_names.h     # the same option names, for the sandbox and the man-page test
  daemon/self_check.cc      # the --self-check report's wording and JSON keys (cpuid, MSR reads)
  daemon/ctl.cc             # resctrlfsctl's --help (fault injection "MSR writes", lwp)
  sandbox/options.cc        # resctrlfs-sandbox's --help (--backend msr, --hw-root)
  sandbox/main.cc           # the sandbox's messages about --backend msr and clients reading CPUID
)
# file|header: an architecture's header a file may include.
includes_allowed=(
  'daemon/ctl.h|hw/x86/lwp_format.h'   # resctrlfsctl lwp decode: AMD LWP records (header-only)
  'daemon/ctl.cc|hw/x86/lwp_format.h'
)

# scan FILE...: one line per offence, "file:line: kind: text".
scan() {
  python3 - "$@" <<'EOF'
import re, sys
word = re.compile(r'msr|cpuid|x86', re.I)
host_isa = re.compile(r'__x86_64__')
arch_include = re.compile(r'#\s*include\s*"(hw/(?:x86|sim|real|broker)/[^"]*)"')
for path in sys.argv[1:]:
    text = open(path, encoding='utf-8').read()
    i, n, line = 0, len(text), 1
    code, kinds = [], []  # pieces of (kind, line, text)
    pieces = []
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            pieces.append(('comment', line, text[i:j])); i = j; continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            pieces.append(('comment', line, text[i:j])); line += text.count('\n', i, j); i = j; continue
        m = re.match(r'R"([^(\s]*)\(', text[i:])
        if m:
            end = ')' + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            pieces.append(('string', line, text[i:j])); line += text.count('\n', i, j); i = j; continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            pieces.append(('string', line, text[i:j])); line += text.count('\n', i, j); i = j; continue
        j = i
        while j < n and not text.startswith('//', j) and not text.startswith('/*', j) \
                and text[j] not in '"\'' and not re.match(r'R"[^(\s]*\(', text[j:j + 20]):
            j += 1
        if j == i:
            j = i + 1
        pieces.append(('code', line, text[i:j])); line += text.count('\n', i, j); i = j
    for lineno, src in enumerate(text.split('\n'), 1):
        m = arch_include.search(src)
        if m:
            print(f'{path}:{lineno}: include: {m.group(1)}')
    for kind, lineno, piece in pieces:
        if kind == 'code':
            piece = host_isa.sub('', piece)
        for off, ln in enumerate(piece.split('\n')):
            if word.search(ln) and not (kind == 'string' and arch_include.search(
                    text.split('\n')[lineno + off - 1])):
                print(f'{path}:{lineno + off}: {kind}: {ln.strip()}')
EOF
}

allowed() {  # allowed LINE: whether an offence is one the lists permit
  local file="${1%%:*}" kind text
  kind="$(cut -d: -f3 <<<"$1" | tr -d ' ')"
  text="$(cut -d: -f4- <<<"$1" | sed 's/^ //')"
  case "$kind" in
    string)
      for f in "${strings_allowed[@]}"; do [ "$f" = "$file" ] && return 0; done ;;
    include)
      for p in "${includes_allowed[@]}"; do [ "$p" = "$file|$text" ] && return 0; done ;;
  esac
  return 1
}

check() {  # check FILE...: prints the offences the lists do not permit
  local l
  while IFS= read -r l; do
    [ -n "$l" ] || continue
    allowed "$l" || echo "$l"
  done < <(scan "$@")
}

# Self-check: a sample with an identifier, a comment, a string and an
# include naming an architecture must be caught, each once; the build
# host's __x86_64__ and a clean line must not.
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/daemon"
printf '%s\n' '#include "hw/x86/registers.h"' 'int n = kMsrCount;' '// through the MSR broker' \
  'const char* s = "--backend msr";' '#if defined(__x86_64__)' 'int platform = 1;  // a domain' \
  >"$dir/daemon/sample.cc"
got="$(cd "$dir" && check daemon/sample.cc | cut -d: -f3 | tr -d ' ' | sort | tr '\n' ' ')"
if [ "$got" != "code comment include string " ]; then
  echo "platform rule: the check missed or over-caught in its own sample (got: $got):" >&2
  (cd "$dir" && scan daemon/sample.cc) >&2
  exit 1
fi

mapfile -t files < <(ls daemon/*.h daemon/*.cc sandbox/*.h sandbox/*.cc)
for f in "${strings_allowed[@]}"; do
  [ -f "$f" ] || { echo "platform rule: $f is listed but does not exist" >&2; exit 1; }
done
hits="$(check "${files[@]}")"
if [ -n "$hits" ]; then
  echo "platform rule: daemon/ and sandbox/ name an architecture (msr, cpuid, x86):" >&2
  echo "$hits" >&2
  echo "(speak of platforms, backends and registers through hw/platform_factory.h; an" >&2
  echo "architecture's part belongs in hw/<arch>/; user-visible text that must stay goes" >&2
  echo "only in the files this script lists)" >&2
  exit 1
fi
echo "platform rule: ${#files[@]} files of daemon/ and sandbox/ name no architecture" \
  "(strings in ${#strings_allowed[@]} listed files, ${#includes_allowed[@]} listed includes)"

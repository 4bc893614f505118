#!/usr/bin/env bash
# The hardware contract names no architecture and no backend: hw/arch.h (the
# only hw/ header fs/ may include) and the base/ headers it pulls in speak of
# resources, domains, controls, counters and events, as the kernel's
# include/linux/resctrl.h does. Checked on the sources:
#   - no register name of hw/x86/registers.h (with or without its IA32_/MSR_
#     prefix), and none of the words that belong to x86 or to one backend
#     (MSR, CPUID, x86, vendor names, the simulator, the broker);
#   - the contract includes no other hw/ header.
# The check first proves on a sample that it does catch such a name.
set -euo pipefail
cd "$(dirname "$0")/../.."

contract=(hw/arch.h base/conf_type.h)
words=(
  'MSRs?' rdmsr wrmsr CPUID x86 'Intel' 'AMD' GenuineIntel AuthenticAMD
  PMT MMIO SDCIAE ABMC BMEC Xeon EPYC '[Vv]endors?' cpuinfo
  # the same in lower case: the check does not rely on how a name is spelled
  'msrs?' rdmsr cpuid pmt mmio sdciae abmc bmec xeon epyc
  '[Ss]imulat[a-z]*' SimMachine SimControl '[Bb]roker' 'hw/sim' 'hw/x86' 'hw/real' 'hw/broker'
)
# Every constant hw/x86/registers.h defines, and its name without the
# architectural prefix (prose says "PQR_ASSOC" for IA32_PQR_ASSOC).
mapfile -t regs < <(sed -nE 's/^inline constexpr [a-z0-9_]+ ([A-Z][A-Z0-9_]+) =.*/\1/p' \
  hw/x86/registers.h | sed -E 'p; s/^(IA32_|MSR_)//' | sort -u)
if [ "${#regs[@]}" -lt 20 ]; then
  echo "contract rule: found only ${#regs[@]} register names in hw/x86/registers.h" >&2
  exit 1
fi
pattern="\\b($(IFS='|'; echo "${words[*]}|${regs[*]}"))\\b"

scan() {  # scan FILE...: prints every offending line
  grep -nHE "$pattern" "$@" || true
  grep -nHE '^#include "hw/' "$@" || true
}

# Self-check: a sample with a register name, a backend word and an hw/
# include must be caught, line by line.
sample="$(mktemp)"
trap 'rm -f "$sample"' EXIT
printf '%s\n' '// Programs PQR_ASSOC of the CPU.' '// as the simulator does' \
  '#include "hw/backend.h"' '// a clean line about domains' >"$sample"
if [ "$(scan "$sample" | wc -l)" != 3 ]; then
  echo "contract rule: the check missed a name in its own sample:" >&2
  scan "$sample" >&2
  exit 1
fi

hits="$(scan "${contract[@]}")"
if [ -n "$hits" ]; then
  echo "contract rule: the hardware contract names x86 registers, a vendor or a backend" >&2
  echo "(say what the call does to resources, domains, controls or counters instead):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "contract rule: ${contract[*]} name no register (${#regs[@]} known), vendor or backend"

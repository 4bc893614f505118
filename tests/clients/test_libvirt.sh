#!/usr/bin/env bash
# libvirt 9.0 (Debian) against resctrlfsd, through the embedded QEMU driver
# (`qemu:///embed?root=DIR`: no libvirtd, nothing outside DIR), inside
# resctrlfs-sandbox on intel-2s fitted to this host's CPUs.
# 1. `virsh capabilities` shows one <cache> bank per L3 domain with the
#    platform's size and CPUs (sysfs), <control> and <monitor> from
#    info/L3 and info/L3_MON, and <memory_bandwidth> from info/MB.
# 2. A guest with <cachetune> (and a <monitor>) and <memorytune> run by
#    virt-qemu-run: its group exists with the requested L3 ways (free ways
#    only) and MB percentage, its vCPU thread is in the group's tasks, and
#    the group is gone when the guest stops. KVM when /dev/kvm exists, else
#    QEMU's TCG (the vCPU is a thread either way).
# Every value is checked against the files of the tree.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd virsh libvirt-clients
require_cmd virt-qemu-run libvirt-daemon-driver-qemu
require_cmd qemu-system-x86_64 qemu-system-x86
ls /usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so >/dev/null 2>&1 ||
  skip "the libvirt QEMU driver is missing (Debian package libvirt-daemon-driver-qemu)"
require_sandbox
require_daemon
[ "$(host_cpus)" -ge 2 ] || skip "intel-2s needs 2 CPUs for its two L3 domains (host has $(host_cpus))"
enter_sandbox --platform intel-2s

R=/sys/fs/resctrl
# Short: libvirt puts UNIX sockets (108-byte limit) under it.
WORK=$(mktemp -d /tmp/lvt.XXXXXX)
URI="qemu:///embed?root=$WORK/root"
VMPID=""
cleanup() {
  [ -n "$VMPID" ] && kill "$VMPID" 2>/dev/null && wait "$VMPID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# A privileged QEMU driver resolves the user it runs guests as (Debian
# builds libvirt with libvirt-qemu) before it reads qemu.conf; the
# libvirt-daemon-system package creates it. Without that package the user is
# added here, in the sandbox's own mount namespace only.
if ! getent passwd libvirt-qemu >/dev/null || ! getent group libvirt-qemu >/dev/null; then
  echo "(adding user libvirt-qemu inside the sandbox's mount namespace only)"
  cp /etc/passwd "$WORK/passwd"
  cp /etc/group "$WORK/group"
  getent passwd libvirt-qemu >/dev/null ||
    echo 'libvirt-qemu:x:64055:64055:Libvirt Qemu:/nonexistent:/usr/sbin/nologin' >>"$WORK/passwd"
  getent group libvirt-qemu >/dev/null || echo 'libvirt-qemu:x:64055:' >>"$WORK/group"
  mount --bind "$WORK/passwd" /etc/passwd && mount --bind "$WORK/group" /etc/group ||
    skip "cannot bind a passwd file with the libvirt-qemu user"
fi
mkdir -p "$WORK/root/etc"
# Guests run as root (nothing else in the sandbox may open /dev/kvm); their
# output goes to files (no virtlogd).
printf 'user = "root"\ngroup = "root"\nstdio_handler = "file"\n' >"$WORK/root/etc/qemu.conf"

L3_IDS=$(schemata_ids L3)
MB_IDS=$(schemata_ids MB)
echo "L3 domains [$L3_IDS], MB domains [$MB_IDS]"
check_eq "intel-2s fitted to the host keeps its two L3 domains" "$L3_IDS" "0 1"

echo "== virsh capabilities"
virsh -c "$URI" capabilities >"$WORK/caps.xml" 2>"$WORK/caps.err"
check_eq "virsh capabilities exit status" $? 0
sed -n '/<cache>/,/<\/cache>/p;/<memory_bandwidth>/,/<\/memory_bandwidth>/p' "$WORK/caps.xml"
[ -s "$WORK/caps.err" ] && sed 's/^/  virsh: /' "$WORK/caps.err" | tail -5

# The expected elements, computed from the tree and sysfs.
CBM_BITS=$(python3 -c "print(bin(int('$(cat $R/info/L3/cbm_mask)', 16)).count('1'))")
NCLOS=$(cat $R/info/L3/num_closids)
MINBITS=$(cat $R/info/L3/min_cbm_bits)
l3dir() {  # the sysfs L3 directory of CPU $1
  dirname "$(grep -lx 3 /sys/devices/system/cpu/cpu$1/cache/index*/level | head -1)"
}
python3 - "$WORK/caps.xml" "$R" "$CBM_BITS" "$NCLOS" "$MINBITS" "$(host_cpus)" >"$WORK/expect" <<'PY'
import glob, os, sys
import xml.etree.ElementTree as ET
caps, R, bits, nclos, minbits, ncpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
root = ET.parse(caps).getroot()
out = []
def read(p):
    return open(p).read().strip()
# Banks expected from sysfs: one per distinct L3 id, size in KiB.
want = {}
for c in range(ncpu):
    for idx in sorted(glob.glob("/sys/devices/system/cpu/cpu%d/cache/index*" % c)):
        if read(idx + "/level") == "3":
            want.setdefault(read(idx + "/id"), (read(idx + "/size"), read(idx + "/shared_cpu_list")))
banks = root.findall("./host/cache/bank")
out.append("banks %d want %d" % (len(banks), len(want)))
for b in banks:
    bid = b.get("id")
    size_k = int(want.get(bid, ("0K", ""))[0].rstrip("K"))
    unit = b.get("unit")
    got_k = int(b.get("size")) * {"KiB": 1, "MiB": 1024, "GiB": 1 << 20}[unit]
    out.append("bank %s level %s type %s size %dK cpus %s | sysfs %dK cpus %s" %
               (bid, b.get("level"), b.get("type"), got_k, b.get("cpus"), size_k,
                want.get(bid, ("", "?"))[1]))
    ctl = b.find("control")
    if ctl is None:
        out.append("bank %s: no control" % bid)
    else:
        # libvirt: granularity = size / CBM bits, in the largest unit that
        # divides it; min = min_cbm_bits ways (omitted when it is one).
        scale = {"B": 1, "KiB": 1024, "MiB": 1 << 20}[ctl.get("unit")]
        gran = size_k * 1024 // bits
        out.append("bank %s control granularity %dB min %dB type %s maxAllocs %s | want %dB %dB both %s" %
                   (bid, int(ctl.get("granularity")) * scale,
                    int(ctl.get("min", ctl.get("granularity"))) * scale,
                    ctl.get("type"), ctl.get("maxAllocs"), gran, gran * minbits, nclos))
mon = root.find("./host/cache/monitor")
if mon is None:
    out.append("no cache monitor")
else:
    # The cache monitor has the occupancy event, the memory bandwidth
    # monitor the bandwidth ones.
    feats = sorted(f.get("name") for f in mon.findall("feature"))
    out.append("monitor level %s reuseThreshold %s maxMonitors %s features %s | want 3 %s %s %s" %
               (mon.get("level"), mon.get("reuseThreshold"), mon.get("maxMonitors"), " ".join(feats),
                read(R + "/info/L3_MON/max_threshold_occupancy"), read(R + "/info/L3_MON/num_rmids"),
                " ".join(sorted(f for f in read(R + "/info/L3_MON/mon_features").split()
                                if f.startswith("llc_")))))
nodes = root.findall("./host/memory_bandwidth/node")
out.append("memory_bandwidth nodes %d" % len(nodes))
for n in nodes:
    c = n.find("control")
    out.append("mb node %s control granularity %s min %s maxAllocs %s | want %s %s %s" %
               (n.get("id"), c.get("granularity"), c.get("min"), c.get("maxAllocs"),
                read(R + "/info/MB/bandwidth_gran"), read(R + "/info/MB/min_bandwidth"),
                read(R + "/info/MB/num_closids")))
mbm = root.find("./host/memory_bandwidth/monitor")
if mbm is not None:
    out.append("mb monitor maxMonitors %s features %s | want %s %s" %
               (mbm.get("maxMonitors"), " ".join(sorted(f.get("name") for f in mbm.findall("feature"))),
                read(R + "/info/L3_MON/num_rmids"),
                " ".join(sorted(f for f in read(R + "/info/L3_MON/mon_features").split()
                                if f.startswith("mbm_")))))
print("\n".join(out))
PY
cat "$WORK/expect" | sed 's/^/  /'
E=$(cat "$WORK/expect")
check_match "one <bank> per L3 domain" "$E" '^banks 2 want 2$'
for id in $L3_IDS; do
  line=$(grep "^bank $id level" <<<"$E")
  check_match "bank $id: level 3, both, the platform's 16 MiB L3 (sysfs size bound)" "$line" \
    "^bank $id level 3 type both size 16384K cpus [0-9,-]+ \\| sysfs 16384K"
  check_match "bank $id: its CPUs are sysfs's shared_cpu_list" "$line" \
    "cpus ([0-9,-]+) \\| sysfs 16384K cpus \\1\$"
  check_match "bank $id: <control> from info/L3 (granularity, min, maxAllocs)" \
    "$(grep "^bank $id control" <<<"$E")" \
    "^bank $id control granularity ([0-9]+B) min ([0-9]+B) type both maxAllocs ([0-9]+) \\| want \\1 \\2 both \\3\$"
done
check_match "<monitor> from info/L3_MON (threshold, RMIDs, features)" "$E" \
  '^monitor level 3 reuseThreshold ([0-9]+) maxMonitors ([0-9]+) features (.*) \| want 3 \1 \2 \3$'
check_match "<memory_bandwidth> <monitor> from info/L3_MON (RMIDs, mbm features)" "$E" \
  '^mb monitor maxMonitors ([0-9]+) features (mbm_.*) \| want \1 \2$'
check_eq "<memory_bandwidth> has one node per MB domain" \
  "$(sed -n 's/^mb node \([0-9]*\) .*/\1/p' <<<"$E" | tr '\n' ' ')" "$MB_IDS "
check_nomatch "<memory_bandwidth> is present" "$E" '^memory_bandwidth nodes 0$'
check_match "<memory_bandwidth> <control> from info/MB (granularity, min, maxAllocs)" "$E" \
  '^mb node [0-9]+ control granularity ([0-9]+) min ([0-9]+) maxAllocs ([0-9]+) \| want \1 \2 \3$'
check_nomatch "<memory_bandwidth> controls all match info/MB" \
  "$(grep '^mb node' <<<"$E" | grep -vE 'granularity ([0-9]+) min ([0-9]+) maxAllocs ([0-9]+) \| want \1 \2 \3$')" '.'

echo "== a guest with <cachetune> and <memorytune>"
if [ -c /dev/kvm ]; then VIRT=kvm; else
  VIRT=qemu
  echo "*** no /dev/kvm: the guest runs under QEMU's TCG instead of KVM ***" >&2
fi
GRAN=$(sed -n 's/^bank 0 control granularity \([0-9]*\)B .*/\1/p' <<<"$E")
check "the bank 0 granularity is known (${GRAN:-none} bytes)" test -n "$GRAN"
GRAN=${GRAN:-1048576}
cat >"$WORK/guest.xml" <<EOF
<domain type='$VIRT'>
  <name>rdtguest</name>
  <memory unit='MiB'>32</memory>
  <vcpu placement='static'>1</vcpu>
  <cputune>
    <cachetune vcpus='0'>
      <cache id='0' level='3' type='both' size='$((2 * GRAN))' unit='B'/>
      <monitor level='3' vcpus='0'/>
    </cachetune>
    <memorytune vcpus='0'>
      <node id='0' bandwidth='50'/>
    </memorytune>
  </cputune>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
# libvirt allocates only ways that no group, the default one included, uses:
# as an administrator would, the default group leaves ways 0-3 free.
echo "L3:0=7f0;1=7f0" >$R/schemata
check_eq "the default group leaves ways 0-3 free" "$(schemata_value $R L3 0)" 7f0
virt-qemu-run -r "$WORK/root" -v "$WORK/guest.xml" >"$WORK/run.log" 2>&1 &
VMPID=$!
# libvirt names the group qemu-<id>-<name>-vcpus_<list>.
group() { ls -d $R/qemu-*rdtguest-vcpus_0 2>/dev/null | head -1; }
vcpu_tid() {  # the thread named "CPU 0/KVM" (or /TCG) of the guest's QEMU
  local p t
  for p in $(pgrep -f 'qemu-system-x86_64.*rdtguest'); do
    for t in /proc/$p/task/*; do
      grep -q '^CPU 0/' "$t/comm" 2>/dev/null && { basename "$t"; return 0; }
    done
  done
  return 1
}
guest_up() { [ -n "$(group)" ] && vcpu_tid >/dev/null && in_tasks "$(group)" "$(vcpu_tid)"; }
# However long QEMU takes to boot the guest on a busy machine, unless it exits.
if ! wait_while_alive "$VMPID" guest_up; then
  sed 's/^/  virt-qemu-run: /' "$WORK/run.log" | tail -15
  tail -5 "$WORK"/root/log/qemu/*.log 2>/dev/null | sed 's/^/  qemu log: /'
fi
G=$(group)
TID=$(vcpu_tid)
check "the guest's resctrl group exists (${G:-none})" test -n "$G"
check "the guest's vCPU 0 thread is running (tid ${TID:-none})" test -n "$TID"
if [ -n "$G" ] && [ -n "$TID" ]; then
  cat "$G/schemata" | sed 's/^/  schemata: /'
  check "vCPU thread $TID is in $(basename "$G")/tasks" in_tasks "$G" "$TID"
  check "vCPU thread $TID left the default group's tasks" bash -c "! grep -qx $TID $R/tasks"
  l3=$((16#$(schemata_value "$G" L3 0)))
  bits=$(python3 -c "print(bin($l3).count('1'))")
  check_eq "L3 domain 0: $((2 * GRAN)) bytes is 2 ways" "$bits" 2
  check "L3 domain 0: the ways are contiguous ($(printf %x $l3))" \
    python3 -c "v=$l3; v//= v & -v; import sys; sys.exit(v & (v + 1))"
  check_eq "L3 domain 0: only free ways (none of the default group's 7f0)" $((l3 & 0x7f0)) 0
  check_eq "MB domain 0 is 50" "$(schemata_value "$G" MB 0)" 50
  # A <monitor> of the allocation's own vCPUs is the allocation's group.
  check_eq "the <monitor> of the same vCPUs made no monitoring group" \
    "$(ls "$G"/mon_groups)" ""
  # The guest's group holds its vCPU thread and no CPUs: real hardware
  # counts it only with the kernel switching its RMID (docs/hardware.md, "Tasks on
  # real hardware").
  if msr_skip "the group's llc_occupancy reads a number" \
    "the group holds tasks and no CPUs; checked to read Unavailable"; then
    check_eq "the group's llc_occupancy reads Unavailable" \
      "$(cat "$G"/mon_data/mon_L3_00/llc_occupancy)" Unavailable
  else
    check_match "the group's llc_occupancy reads a number" \
      "$(cat "$G"/mon_data/mon_L3_00/llc_occupancy)" '^[0-9]+$'
  fi
fi
kill "$VMPID" 2>/dev/null
wait "$VMPID" 2>/dev/null
VMPID=""
gone() { [ -z "$(group)" ]; }
[ -n "$G" ] && check "the guest's group is removed when the guest stops" wait_for gone
finish

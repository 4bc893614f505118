#!/bin/sh
# Runs inside a fresh Debian system (tests/packaging/chroot_test.sh), as a
# user with sudo: installs resctrlfs (MODE deb: the .deb files in
# /tmp/artifacts with apt; MODE archive: the release archive there, with
# packaging/ci-install.sh, the script docs/ci.md's recipes run), mounts a
# simulated platform, makes a group, writes and reads back a schemata
# line, runs pqos (the distribution's own) through resctrlfs-sandbox, and
# uninstalls (the man
# pages and bash completions are installed with the programs and go with
# them).
# usage: in_chroot.sh deb|archive
set -eu
mode=$1
step() { echo "== [in chroot] $*"; }
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
case $mode in
  deb)
    step "apt-get install the .deb files"
    sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y /tmp/artifacts/resctrlfs_*.deb /tmp/artifacts/resctrl-msrd_*.deb
    dpkg -L resctrlfs resctrl-msrd | grep -E 'bin/|\.service$|\.conf$' ;;
  archive)
    step "ci-install.sh"
    /tmp/ci-install.sh /tmp/artifacts/resctrlfs-*-x86_64-linux.tar.gz ;;
esac
step "versions"
for p in resctrlfsd resctrlfsctl resctrl-msrd resctrlfs-sandbox resctrlfs-exporter; do "$p" --version; done
case $mode in deb) prefix=/usr ;; archive) prefix=/usr/local ;; esac
step "man pages and bash completions under $prefix/share"
docs=
for page in resctrlfsd.8 resctrlfsctl.8 resctrl-msrd.8 resctrlfs-exporter.8 resctrlfs-sandbox.1; do
  docs="$docs $prefix/share/man/man${page##*.}/$page.gz $prefix/share/bash-completion/completions/${page%.*}"
done
for f in $docs; do
  [ -f "$f" ] || { echo "FAIL: $f is not installed" >&2; exit 1; }
done

mp=/tmp/resctrl
mkdir -p $mp
step "mount intel-2s at $mp"
sudo resctrlfsd --platform intel-2s --control /tmp/rfsd.sock $mp
sudo mkdir $mp/g1
echo "L3:0=f;1=3f" | sudo tee $mp/g1/schemata >/dev/null
got=$(grep '^ *L3:' $mp/g1/schemata)
echo "g1/schemata: $got"
echo "$got" | grep -Eq '^ *L3:0=0*f;1=0*3f$' || { echo "FAIL: schemata read back as '$got'" >&2; exit 1; }
sudo resctrlfsctl --socket /tmp/rfsd.sock status >/dev/null
sudo rmdir $mp/g1
sudo umount $mp
# The daemon exits after the unmount. (It detached at the start, so it is
# the namespace's PID 1's child now, which does not reap it: a zombie, state
# Z, has exited.)
i=0
while grep -q '^[0-9]* (resctrlfsd) [^Z]' /proc/[0-9]*/stat 2>/dev/null; do
  i=$((i + 1))
  [ $i -lt 600 ] || { echo "FAIL: resctrlfsd still runs after the unmount" >&2; exit 1; }
  sleep 0.1
done
rmdir $mp

step "resctrlfs-sandbox --platform intel-2s@host -- pqos -I -d"
# pqos finds no resctrl mounted in the sandbox's namespace and mounts it
# itself (mount(2), which the sandbox serves), then shows the capabilities.
out=$(sudo resctrlfs-sandbox --platform intel-2s@host -- pqos -I -d 2>&1) || {
  echo "$out"; echo "FAIL: pqos -I -d in the sandbox failed" >&2; exit 1; }
echo "$out"
echo "$out" | grep -q 'L3 CAT' || { echo "FAIL: pqos -I -d in the sandbox shows no L3 CAT" >&2; exit 1; }

step "uninstall"
case $mode in
  deb) sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y resctrlfs resctrl-msrd ;;
  archive) sudo /usr/local/share/resctrlfs/uninstall.sh ;;
esac
# (The shell's command hash would still name them: look at the files.)
for f in /usr/sbin/resctrlfsd /usr/bin/resctrlfs-sandbox /usr/local/sbin/resctrlfsd \
  /usr/local/bin/resctrlfs-sandbox $docs; do
  if [ -e $f ]; then echo "FAIL: $f is still installed" >&2; exit 1; fi
done
echo "ok: installed, mounted, wrote schemata, ran pqos in the sandbox, uninstalled"

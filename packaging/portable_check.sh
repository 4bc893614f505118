#!/bin/sh
# Checks that each PROGRAM needs nothing but the kernel and glibc: its
# NEEDED entries are glibc's own libraries only, and the newest GLIBC_x.y
# symbol version it requires is at most MAX (2.31: Debian 11, older than
# every Ubuntu release CI providers run).
# usage: portable_check.sh MAX PROGRAM...
set -u
max=$1
shift
fail=0
for p in "$@"; do
  name=$(basename "$p")
  needed=$(readelf -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for lib in $needed; do
    case $lib in
      libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1|ld-linux-x86-64.so.2) ;;
      *) echo "FAIL: $name needs $lib, which is not part of glibc" >&2; fail=1 ;;
    esac
  done
  newest=$(objdump -T "$p" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  if [ -z "$newest" ]; then
    echo "FAIL: $name requires no glibc symbol version (not a dynamic glibc program?)" >&2
    fail=1
  elif [ "$(printf '%s\n%s\n' "$newest" "$max" | sort -V | tail -1)" != "$max" ]; then
    echo "FAIL: $name requires GLIBC_$newest, newer than $max:" \
      "$(objdump -T "$p" | grep "GLIBC_$newest" | awk '{print $NF}' | sort -u | tr '\n' ' ')" >&2
    fail=1
  else
    echo "ok: $name needs $(echo $needed | tr ' ' ','), glibc >= $newest"
  fi
done
exit $fail

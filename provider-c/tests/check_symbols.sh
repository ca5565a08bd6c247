#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every ibv_* symbol libmetaroce.so exports must carry the default version
# that libibverbs.so.1 gives the same symbol; otherwise an app's versioned
# reference would not bind to it.
set -eu
lib=$1
real=$2
dynsyms() {
	objdump -T "$1" | awk '$NF ~ /ibv_/ && $0 !~ /\*UND\*/ { print $NF, $(NF-1) }'
}
ours=$(dynsyms "$lib")
[ -n "$ours" ] || { echo "no exported verbs in $lib"; exit 1; }
bad=0
n=0
echo "$ours" | while read -r name ver; do
	want=$(dynsyms "$real" | awk -v n="$name" '$1 == n && $2 !~ /^\(/ { print $2 }')
	if [ "$want" != "$ver" ]; then
		echo "FAIL $name: ours $ver, libibverbs ${want:-none}"
		exit 1
	fi
done || bad=1
n=$(echo "$ours" | wc -l)
[ "$bad" = 0 ] || exit 1
echo "check_symbols: OK ($n verbs, versions match libibverbs)"

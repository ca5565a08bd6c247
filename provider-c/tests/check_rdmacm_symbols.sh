#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libmetaroce-rdmacm.so must export exactly librdmacm.so.1's functions, each
# with librdmacm's version, so that an application's versioned references
# bind to it when preloaded.
set -eu
lib=$1
real=$2
[ -f "$real" ] || { echo "check_rdmacm_symbols: no $real (librdmacm1): skipped"; exit 0; }
funcs() {
	objdump -T "$1" | awk '$0 ~ / DF \.text/ { print $NF, $(NF-1) }' | sort
}
ours=$(funcs "$lib")
theirs=$(funcs "$real")
if [ "$ours" != "$theirs" ]; then
	echo "FAIL: exports differ from $real (- librdmacm, + ours):"
	printf '%s\n' "$theirs" > /tmp/check_rdmacm.$$.a
	printf '%s\n' "$ours" > /tmp/check_rdmacm.$$.b
	diff /tmp/check_rdmacm.$$.a /tmp/check_rdmacm.$$.b || true
	rm -f /tmp/check_rdmacm.$$.a /tmp/check_rdmacm.$$.b
	exit 1
fi
echo "check_rdmacm_symbols: OK ($(printf '%s\n' "$ours" | wc -l) functions, versions match librdmacm)"

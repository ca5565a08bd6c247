#!/usr/bin/env bash
# pid-reuse.sh DIR: the PID-reuse attack on the daemon's "DMA", made certain.
# Run as PID 1 of a fresh PID + network namespace with its own /proc:
#   unshare --pid --fork --mount-proc --net bash pid-reuse.sh DIR
# $NICD is the daemon command (default: bin/mrce-nicd of this tree), $PROBE
# the built provider-c/build/mrce_pid_reuse, $PRELOAD libmetaroce.so.
#
# An attacker registers memory, leaves its connection to a forked child and
# exits; ns_last_pid hands its PID to a victim that maps the same addresses;
# the child then posts an RDMA WRITE of the dead registration. Prints
# "victim: untouched" or "victim: CHANGED" and the child's outcome.
set -uo pipefail
dir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
NICD=${NICD:-$root/bin/mrce-nicd}
PROBE=${PROBE:-$root/provider-c/build/mrce_pid_reuse}
PRELOAD=${PRELOAD:-$root/provider-c/build/libmetaroce.so}
sock=$dir/nicd.sock

fail() {
	echo "FAIL: $*"
	exit 1
}

ip link set lo up || fail "lo up"
"$NICD" --ifname lo --sock "$sock" --cm-port 0 >"$dir/nicd.log" 2>&1 &
nicd=$!
for ((i = 0; i < 600; i++)); do # bounded: at most 60 s for the JVM to start
	[[ -S $sock ]] && grep -q 'mrce-nicd ready' "$dir/nicd.log" && break
	kill -0 $nicd 2>/dev/null || fail "the daemon exited: $(tail -5 "$dir/nicd.log")"
	sleep 0.1
done
[[ -S $sock ]] || fail "the daemon did not start"
mkfifo "$dir/go" "$dir/ready" "$dir/done"

METAROCE_SOCK=$sock LD_PRELOAD=$PRELOAD "$PROBE" attack "$dir/pid" "$dir/go" "$dir/result" ||
	fail "attacker setup"
read -r attacker <"$dir/pid"
echo "attacker pid $attacker exited; its child holds the connection"

# Give the attacker's PID to the victim. The daemon's threads may take a PID
# in between: then stop that victim and try again.
victim=
for ((try = 0; try < 20; try++)); do
	echo $((attacker - 1)) >/proc/sys/kernel/ns_last_pid
	"$PROBE" victim "$dir/ready" "$dir/done" >"$dir/victim.out" 2>&1 &
	v=$!
	if ((v == attacker)); then
		victim=$v
		break
	fi
	kill $v
	wait $v 2>/dev/null
done
[[ -n $victim ]] || fail "PID $attacker was not reused"
echo "victim pid $victim"
read -r -n 1 _ <"$dir/ready"
echo go >"$dir/go"
for ((i = 0; i < 300; i++)); do # the child writes its result within 10 s of "go"
	[[ -s $dir/result ]] && break
	sleep 0.1
done
echo "attacker's child: $(cat "$dir/result" 2>/dev/null || echo 'no result')"
echo d >"$dir/done"
wait "$victim"
rc=$?
cat "$dir/victim.out"
kill -TERM $nicd
wait $nicd
grep -E 'exited: its registrations|refus' "$dir/nicd.log" | head -3
exit $rc

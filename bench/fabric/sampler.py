#!/usr/bin/env python3
"""Samples the fabric benchmark's counters until SIGTERM (run-fabric starts and stops it).

Every --interval-ms (10 by default) it reads the spine interfaces' byte counters of both leaves
from /proc/PID/net/dev of a process living in each leaf's namespace (one read per leaf: cheap
enough for 10 ms), and writes one line:

    epoch_ms  ab_0 .. ab_{n-1}  ba_0 .. ba_{n-1}

ab_i: bytes received by leaf B from spine link i (A to B, after the link's rate limit and drops);
ba_i: bytes received by leaf A from spine link i (B to A: acknowledgements). Cumulative counters;
report.py turns them into rates.

With --admin SOCK it also asks the sending daemon's admin socket for its telemetry every
--admin-ms (100 by default; a snapshot walks every QP and path on the engine thread, too costly
every 10 ms) and writes to --daemon-out:

    epoch_ms dataTx dataRetransmits pathLosses pathTimeouts pathRetirements timeouts
    paths active_paths bytes_sent delivered_bytes
"""
import argparse
import json
import signal
import socket
import sys
import threading
import time

stop = threading.Event()


def read_dev(pid, prefix, n):
    """Cumulative rx_bytes of interfaces prefix0..prefix{n-1} in the netns of pid."""
    out = [0] * n
    with open(f"/proc/{pid}/net/dev") as f:
        for line in f:
            name, sep, rest = line.partition(":")
            if not sep:
                continue
            name = name.strip()
            if name.startswith(prefix):
                try:
                    i = int(name[len(prefix):])
                except ValueError:
                    continue
                if 0 <= i < n:
                    out[i] = int(rest.split()[0])
    return out


def admin_stats(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        s.connect(path)
        s.sendall(b"stats\n")
        chunks = []
        while True:
            c = s.recv(1 << 16)
            if not c:
                break
            chunks.append(c)
    return json.loads(b"".join(chunks))


# Which recovery acted (spec 8, 10a) and the home returns (spec 10): appended to each daemon sample after the columns above.
DETECTORS = ("gapsDetected", "crossPathLosses", "spuriousLosses", "tlps", "opportunisticRetransmits",
             "homeTrials", "homeReturns")


def daemon_loop(args):
    with open(args.daemon_out, "w") as out:
        out.write("# epoch_ms dataTx dataRetransmits pathLosses pathTimeouts pathRetirements timeouts"
                  " paths active_paths bytes_sent delivered_bytes " + " ".join(DETECTORS) + "\n")
        nxt = time.monotonic()
        while not stop.is_set():
            try:
                now = time.time()
                st = admin_stats(args.admin)
                c = st.get("counters", {})
                paths = active = sent = delivered = 0
                for qp in st.get("qps", []):
                    for p in qp.get("paths", []):
                        paths += 1
                        active += p.get("state") == "active"
                        sent += p.get("bytesSent", 0)
                        delivered += p.get("deliveredBytes", 0)
                out.write("%.3f %d %d %d %d %d %d %d %d %d %d" % (
                    now * 1000, c.get("dataTx", 0), c.get("dataRetransmits", 0),
                    c.get("pathLosses", 0), c.get("pathTimeouts", 0), c.get("pathRetirements", 0),
                    c.get("timeouts", 0), paths, active, sent, delivered))
                out.write("".join(" %d" % c.get(k, 0) for k in DETECTORS) + "\n")
                out.flush()
            except (OSError, ValueError):
                pass  # the daemon is starting or stopping: no sample this time
            nxt += args.admin_ms / 1000.0
            stop.wait(max(0.0, nxt - time.monotonic()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid-a", type=int, required=True, help="a process in leaf A's namespace")
    ap.add_argument("--pid-b", type=int, required=True, help="a process in leaf B's namespace")
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--interval-ms", type=float, default=10.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--admin")
    ap.add_argument("--admin-ms", type=float, default=100.0)
    ap.add_argument("--daemon-out")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    worker = None
    if args.admin and args.daemon_out:
        worker = threading.Thread(target=daemon_loop, args=(args,), daemon=True)
        worker.start()
    step = args.interval_ms / 1000.0
    n = args.spines
    with open(args.out, "w") as out:
        out.write("# epoch_ms " + " ".join(f"ab_{i}" for i in range(n)) + " "
                  + " ".join(f"ba_{i}" for i in range(n)) + "\n")
        nxt = time.monotonic()
        while not stop.is_set():
            try:
                now = time.time()  # right before the A to B counters are read
                ab = read_dev(args.pid_b, "lb-s", n)
                ba = read_dev(args.pid_a, "la-s", n)
            except OSError as e:
                print(f"sampler: {e}", file=sys.stderr)
                break
            out.write("%.3f %s %s\n" % (now * 1000, " ".join(map(str, ab)),
                                      " ".join(map(str, ba))))
            nxt += step
            delay = nxt - time.monotonic()
            if delay < 0:
                nxt = time.monotonic()  # late (the machine is busy): the next sample is now
                delay = 0
            stop.wait(delay)
    if worker:
        worker.join(timeout=3)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-path snapshots of a daemon's QPs, from its admin socket, for diagnosing what limits a QP.

Usage: path_snapshots.py 'ADMIN_SOCKET_GLOB' SECONDS OUT [MIN_PATHS]

Every 100 ms, for every admin socket matching the glob (e.g. '/tmp/metaroce/nicd-*.admin.sock'
while bench/fabric/run-fabric runs) and every RC QP with at least MIN_PATHS (8) paths, writes one
line per path: epoch_s socket path_id state min_rtt_ns srtt_ns cwnd_bytes inflight_bytes rate_Bps
entropy.
Then prints, per snapshot, the QP's delivery rate, the shares of its ACTIVE paths that are
window-limited (in flight within a packet of the window) and idle (nothing in flight), and the QP's
unacknowledged packets against its window and the receive window.
"""
import glob
import sys
import time

from sampler import admin_stats  # the fabric sampler's admin-socket query, beside this script


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    pattern, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    min_paths = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    snaps = []
    end = time.time() + secs
    with open(out, "w") as f:
        f.write("# epoch_s socket path state min_rtt_ns srtt_ns cwnd_bytes inflight_bytes rate_Bps entropy\n")
        while time.time() < end:
            for sock in glob.glob(pattern):
                try:
                    st = admin_stats(sock)
                except (OSError, ValueError):
                    continue  # the daemon is starting or stopping
                for qp in st.get("qps", []):
                    paths = qp.get("paths", [])
                    if len(paths) < min_paths:
                        continue
                    t = time.time()
                    active = [p for p in paths if p.get("state") == "active"]
                    for p in paths:
                        f.write("%.3f %s %s %s %d %d %d %d %d %d\n" % (
                            t, sock, p.get("id"), p.get("state"), p.get("minRttNs", 0), p.get("srttNs", 0),
                            p.get("cwndBytes", 0),
                            p.get("inflightBytes", 0), p.get("deliveryRateBps", 0), p.get("entropy", 0)))
                    if active:
                        limited = sum(1 for p in active
                                      if p.get("inflightBytes", 0) > 0
                                      and p.get("inflightBytes", 0) >= p.get("cwndBytes", 0) - 4200)
                        idle = sum(1 for p in active if p.get("inflightBytes", 0) == 0)
                        snaps.append((t, sum(p.get("deliveryRateBps", 0) for p in active) * 8 / 1e9,
                                      limited / len(active), idle / len(active),
                                      sum(p.get("cwndBytes", 0) for p in active) / len(active) / 1024,
                                      sum(p.get("srttNs", 0) for p in active) / len(active) / 1e6,
                                      qp.get("unackedPackets", 0), qp.get("window", 0),
                                      qp.get("receiveWindow", 0)))
            time.sleep(0.1)
    for t, gbps, lim, idle, cwnd, srtt, unacked, window, rwnd in snaps:
        print("%.1f rate %.2f Gbit/s window-limited %.2f idle %.2f cwnd %.1f KB srtt %.1f ms"
              " QP unacked %d window %d rwnd %d" % (t, gbps, lim, idle, cwnd, srtt, unacked, window, rwnd))


if __name__ == "__main__":
    main()

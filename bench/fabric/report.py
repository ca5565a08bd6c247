#!/usr/bin/env python3
"""run-fabric's arithmetic: timelines from the sampler's counters, medians, rows and tables.

  report.py timeline RAW EVENTS OUT.dat --spines N --rate-mbit R [--daemon RAW.daemon OUT.daemon.dat]
      Rates from the sampler's cumulative counters, times relative to the traffic's start (the
      "traffic" line of EVENTS, else the client's launch, "start"). Writes OUT.dat (t_s, A to B Gbit/s in all and per spine, B to A
      Gbit/s in all) and prints one line of key=value facts about the run:
        share=a/b/c/d  per-spine share of the A to B bytes while the client ran (percent)
        top=i          the spine that carried the most
        recover_ms=x   (when EVENTS has "on"/"off" impairment times and --remaining-mbit is set)
                       from the first "on" until the trailing 50 ms average of A to B stays at
                       >= 0.8 of the remaining capacity for 500 ms (or until "off"); "-" if never
        back_ms=x      from the first "on" until A to B is first back at >= 0.8 of the remaining
                       capacity: the mean over the last 50 ms, counting only samples that began
                       at or after "on" (at least 20 ms of them), so that no traffic from before
                       the impairment counts; "-" if never before "off"
        reuse_ms=x     from the last "off" until the restored spine carries >= 0.1 of its rate
                       (trailing 50 ms average); "-" if never before the client ended
  report.py row RUNS.tsv SCENARIO
      Medians per configuration of the scenario's runs; prints the scenario's rows.
  report.py table RUNS.tsv
      Every scenario's rows, as a Markdown table.
"""
import argparse
import statistics
import sys


def load_events(path):
    ev = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                ev.append((parts[0], float(parts[1])))
    return ev


def load_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append([float(x) for x in line.split()])
    return rows


def trailing_mean(ts, vals, i, window_s):
    """Mean of vals over the samples ending in (ts[i] - window_s, ts[i]], weighted by duration."""
    total = 0.0
    dur = 0.0
    j = i
    while j > 0 and ts[i] - ts[j - 1] <= window_s + 1e-9:
        dt = ts[j] - ts[j - 1]
        total += vals[j] * dt
        dur += dt
        j -= 1
    return total / dur if dur > 0 else vals[i]


def mean_after(ts, vals, i, window_s, t0):
    """Duration-weighted mean of the samples ending in (ts[i] - window_s, ts[i]] that began at or
    after t0, and the time they cover."""
    total = 0.0
    dur = 0.0
    j = i
    while j > 0 and ts[i] - ts[j - 1] <= window_s + 1e-9 and ts[j - 1] >= t0 - 1e-9:
        dt = ts[j] - ts[j - 1]
        total += vals[j] * dt
        dur += dt
        j -= 1
    return (total / dur if dur > 0 else 0.0), dur


def cmd_timeline(a):
    n = a.spines
    ev = load_events(a.events)
    # time zero: when the traffic started (run-fabric's driver saw it), else the client's launch
    start = next((t for k, t in ev if k == "traffic"), None) or next((t for k, t in ev if k == "start"), None)
    end = next((t for k, t in reversed(ev) if k == "end"), None)
    raw = load_rows(a.raw)
    if start is None or len(raw) < 2:
        print("share=- top=- recover_ms=- reuse_ms=- back_ms=-")
        with open(a.out, "w") as f:
            f.write("# no samples\n")
        return
    ts = []
    ab = []  # per sample: [total, s0..]
    ba = []
    for prev, cur in zip(raw, raw[1:]):
        dt = (cur[0] - prev[0]) / 1000.0
        if dt <= 0:
            continue
        per = [(cur[1 + i] - prev[1 + i]) * 8 / dt / 1e9 for i in range(n)]
        back = sum((cur[1 + n + i] - prev[1 + n + i]) for i in range(n)) * 8 / dt / 1e9
        ts.append((cur[0] - start) / 1000.0)
        ab.append([sum(per)] + per)
        ba.append(back)
    with open(a.out, "w") as f:
        f.write("# t_s (end of the sample, from the traffic's start)  A->B Gbit/s: total "
                + " ".join(f"spine{i}" for i in range(n))
                + "  B->A Gbit/s total  A->B Gbit/s total, trailing 50 ms average\n")
        totals = [r[0] for r in ab]
        for k, (t, row, back) in enumerate(zip(ts, ab, ba)):
            f.write("%.3f %s %.4f %.4f\n" % (t, " ".join("%.4f" % v for v in row), back,
                                               trailing_mean(ts, totals, k, 0.05)))
    # the client's span from the traffic's start to its exit
    end_s = (end - start) / 1000.0 if end else ts[-1]
    inside = [k for k, t in enumerate(ts) if 0 <= t <= end_s]
    bytes_by = [0.0] * n
    for k in inside:
        # bytes of the sample = rate * dt
        dt = ts[k] - ts[k - 1] if k > 0 else 0
        for i in range(n):
            bytes_by[i] += ab[k][1 + i] * dt
    total = sum(bytes_by)
    share = "/".join("%.0f" % (100 * b / total) for b in bytes_by) if total > 0 else "-"
    top = max(range(n), key=lambda i: bytes_by[i]) if total > 0 else "-"
    facts = {"share": share, "top": top, "recover_ms": "-", "reuse_ms": "-", "back_ms": "-"}
    ons = [(t - start) / 1000.0 for k, t in ev if k == "on"]
    offs = [(t - start) / 1000.0 for k, t in ev if k == "off"]
    totals = [r[0] for r in ab]
    if ons and a.remaining_mbit:
        t_on = ons[0]
        t_stop = next((t for t in offs if t > t_on), end_s)
        target = 0.8 * a.remaining_mbit / 1000.0
        hold = 0.5
        idx = [k for k, t in enumerate(ts) if t_on < t <= t_stop]
        good_since = None
        recovered = None
        for k in idx:
            if trailing_mean(ts, totals, k, 0.05) >= target:
                if good_since is None:
                    good_since = ts[k]
                if ts[k] - good_since >= hold or ts[k] >= t_stop - 0.01:
                    recovered = good_since
                    break
            else:
                good_since = None
        else:
            recovered = good_since  # good until the end, shorter than the hold
        if recovered is not None:
            facts["recover_ms"] = "%.0f" % ((recovered - t_on) * 1000)
        for k in idx:
            m, covered = mean_after(ts, totals, k, 0.05, t_on)
            if covered >= 0.02 - 1e-9 and m >= target:
                facts["back_ms"] = "%.0f" % ((ts[k] - t_on) * 1000)
                break
    if offs and a.spine is not None:
        t_off = offs[-1]
        spine_vals = [r[1 + a.spine] for r in ab]
        for k, t in enumerate(ts):
            if t_off < t <= end_s and trailing_mean(ts, spine_vals, k, 0.05) >= 0.1 * a.rate_mbit / 1000.0:
                facts["reuse_ms"] = "%.0f" % ((t - t_off) * 1000)
                break
    if a.daemon_raw and a.daemon_out:
        try:
            d = load_rows(a.daemon_raw)
        except OSError:
            d = []
        with open(a.daemon_out, "w") as f:
            f.write("# t_s dataTx dataRetransmits pathLosses pathTimeouts pathRetirements timeouts paths"
                    " active_paths  retransmissions per new data packet since the previous sample"
                    "  gapsDetected crossPathLosses spuriousLosses tlps opportunisticRetransmits homeTrials homeReturns"
                    " (cumulative, when the sampler recorded them)\n")
            for prev, cur in zip(d, d[1:]):
                tx = cur[1] - prev[1]
                share_r = (cur[2] - prev[2]) / tx if tx > 0 else 0.0
                f.write("%.3f %s %.4f%s\n" % ((cur[0] - start) / 1000.0,
                                              " ".join("%d" % v for v in cur[1:9]), share_r,
                                              "".join(" %d" % v for v in cur[11:18])))
    print(" ".join(f"{k}={v}" for k, v in facts.items()))


# runs.tsv columns (run-fabric writes them)
COLS = ["scenario", "paths", "config", "run", "gbps", "capacity", "share", "top", "recover_ms",
        "reuse_ms", "impaired", "back_ms"]


def read_runs(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            out.append(dict(zip(COLS, parts)))
    return out


def med(vals):
    nums = [float(v) for v in vals if v not in ("-", "", None)]
    return statistics.median(nums) if nums else None


def fmt(v, spec="%.2f"):
    return "-" if v is None else spec % v


ORDER = ["xdp", "udp", "baseline", "tcp1", "tcp4"]


def scenario_rows(runs, scenario):
    rs = [r for r in runs if r["scenario"] == scenario]
    if not rs:
        return []
    cap = float(rs[0]["capacity"])
    impaired = rs[0]["impaired"]
    paths = sorted({int(r["paths"]) for r in rs if r["config"] in ("xdp", "udp")})
    fixed = {}
    for c in ("baseline", "tcp1", "tcp4"):
        sel = [r for r in rs if r["config"] == c]
        if sel:
            fixed[c] = (med(r["gbps"] for r in sel), sel)
    rows = []
    for p in paths or [0]:
        cells = {}
        for c in ("xdp", "udp"):
            sel = [r for r in rs if r["config"] == c and int(r["paths"]) == p]
            if sel:
                cells[c] = (med(r["gbps"] for r in sel), sel)
        cells.update(fixed)
        row = {"scenario": scenario, "paths": p, "capacity": cap, "impaired": impaired,
               "runs": max((len(v[1]) for v in cells.values()), default=0)}
        for c in ORDER:
            if c in cells:
                g, sel = cells[c]
                row[c] = g
                row[c + "_ratio"] = None if g is None else g / cap
                row[c + "_share"] = sel[0]["share"]
                row[c + "_top"] = sel[0]["top"]
                row[c + "_recover"] = med(r["recover_ms"] for r in sel)
                row[c + "_reuse"] = med(r["reuse_ms"] for r in sel)
                row[c + "_back"] = med(r.get("back_ms") for r in sel)
        b = row.get("baseline")
        x = row.get("xdp")
        row["xdp_vs_base"] = x / b if x is not None and b else None
        rows.append(row)
    return rows


def cell(row, c):
    g = row.get(c)
    if g is None:
        return "-"
    return "%.2f (%.2f)" % (g, row[c + "_ratio"])


def cmd_row(a):
    runs = read_runs(a.runs)
    for row in scenario_rows(runs, a.scenario):
        line = "%-10s paths %3s  ceiling %.3f Gbit/s  xdp %s  udp %s  baseline %s  tcp1 %s  tcp4 %s  xdp/baseline %s" % (
            row["scenario"], row["paths"] or "-", row["capacity"], cell(row, "xdp"), cell(row, "udp"),
            cell(row, "baseline"), cell(row, "tcp1"), cell(row, "tcp4"), fmt(row["xdp_vs_base"], "%.1fx"))
        extra = []
        for c in ("xdp", "udp", "baseline"):
            if row.get(c + "_back") is not None:
                extra.append(f"{c} back {row[c + '_back']:.0f} ms")
            if row.get(c + "_recover") is not None:
                extra.append(f"{c} recover {row[c + '_recover']:.0f} ms")
            if row.get(c + "_reuse") is not None:
                extra.append(f"{c} reuse {row[c + '_reuse']:.0f} ms")
        if row.get("xdp_share"):
            extra.append("xdp spine share % " + row["xdp_share"])
        if row.get("baseline_top") not in (None, "-"):
            extra.append("baseline on spine " + row["baseline_top"])
        print(line + ("  [" + "; ".join(extra) + "]" if extra else ""))


def cmd_table(a):
    runs = read_runs(a.runs)
    scen = []
    for r in runs:
        if r["scenario"] not in scen:
            scen.append(r["scenario"])
    print("| scenario | impaired spine | paths | ceiling Gbit/s | MetaRoCE AF_XDP | MetaRoCE UDP | go-back-N baseline"
          " | TCP 1 stream | TCP 4 streams | AF_XDP / baseline | recovery | AF_XDP spine share % | baseline's spine |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |")
    for s in scen:
        for row in scenario_rows(runs, s):
            rec = []
            for c, name in (("xdp", "AF_XDP"), ("udp", "UDP")):
                part = []
                if row.get(c + "_back") is not None:
                    part.append("back after %.0f ms" % row[c + "_back"])
                if row.get(c + "_recover") is not None:
                    part.append("steady after %.0f ms" % row[c + "_recover"])
                if row.get(c + "_reuse") is not None:
                    part.append("reused after %.0f ms" % row[c + "_reuse"])
                if part:
                    rec.append(name + ": " + ", ".join(part))
            print("| %s | %s | %s | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, row["impaired"], row["paths"] or "-", row["capacity"], cell(row, "xdp"), cell(row, "udp"),
                cell(row, "baseline"), cell(row, "tcp1"), cell(row, "tcp4"), fmt(row["xdp_vs_base"], "%.1fx"),
                "; ".join(rec) or "-", row.get("xdp_share", "-"), row.get("baseline_top", "-")))
    print()
    print("Cells: median Gbit/s of the runs (ratio to the ceiling). Ceiling: the capacity the fabric"
          " offers, averaged over the tools' measured window.")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("timeline")
    t.add_argument("raw")
    t.add_argument("events")
    t.add_argument("out")
    t.add_argument("--spines", type=int, default=4)
    t.add_argument("--rate-mbit", type=float, required=True)
    t.add_argument("--remaining-mbit", type=float)
    t.add_argument("--spine", type=int, help="the impaired spine")
    t.add_argument("--daemon-raw")
    t.add_argument("--daemon-out")
    r = sub.add_parser("row")
    r.add_argument("runs")
    r.add_argument("scenario")
    tb = sub.add_parser("table")
    tb.add_argument("runs")
    a = ap.parse_args()
    {"timeline": cmd_timeline, "row": cmd_row, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

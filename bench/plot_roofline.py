#!/usr/bin/env python3
"""Merges spmmv-bench runs (--json) and a kpm-dos log into the CPU roofline figures of
docs/performance.md (issue 4); called by scripts/bench_cpu.sh.

Writes into --out-dir:
  cpu_spmmv.json  machine facts, per configuration the median over the runs of the
                  per-run median sweep time and every derived figure, the sigma scan,
                  P_LLC, and the kpm-dos wall time and kernel fraction
  cpu_table.md    the markdown roofline table (plus sigma scan and kpm-dos summary)
  roofline.png    Gflop/s vs R: measured points per operator, model P*, P_peak, P_LLC

The derived figures use the same formulas as spmmv-bench (numerics/base/perf_model.hpp):
P* = min(P_peak, b / B_min(R)), B_min(R) = (260/R + 48)/138 bytes/flop, Omega = t b / V_own,
with b the median over the runs of the triad bandwidth measured at each run's start.
"""
import argparse
import json
import re
import statistics
import sys


def b_min(r, single=False):
    """Seed 004's code balance for 13 entries per row; single: complex float (8-byte values)."""
    return (156.0 / r + 24.0) / 138.0 if single else (260.0 / r + 48.0) / 138.0


def is_single(op):
    """spmmv-bench's single-precision ops end in "s" (sell-8s, sell-8ts, frees)."""
    return (op.startswith("sell-") and op.endswith("s")) or op == "frees"


def parse_kpm_log(path, wall):
    text = open(path).read()
    out = {"log": path, "wall_seconds_process": wall}
    m = re.search(r"^time\s*:(.*)$", text, re.M)
    if not m:
        sys.exit(f"plot_roofline.py: no 'time :' line in {path}")
    phases = dict((k, float(v)) for k, v in re.findall(r"(\w+) ([0-9.]+) s", m.group(1)))
    out["phases_seconds"] = {k: v for k, v in phases.items() if k != "total"}
    out["total_seconds"] = phases["total"]
    out["kernel_seconds"] = phases.get("moments", 0.0)
    out["kernel_fraction"] = out["kernel_seconds"] / out["total_seconds"]
    m = re.search(r"^moments\s*:.* (\d+) augmented sweeps of width (\d+) in ([0-9.]+) s"
                  r"(?: \(and ([0-9.]+) s to make the start vectors\))?: ([0-9.]+) Gflop/s, ([0-9.]+) GB/s", text, re.M)
    if m:
        out.update(sweeps=int(m.group(1)), width=int(m.group(2)), kernel_gflops=float(m.group(5)),
                   kernel_gb_s=float(m.group(6)))
    for key in ("model", "operator"):
        m = re.search(rf"^{key}\s*:\s*(.*)$", text, re.M)
        if m:
            out[key] = m.group(1).strip()
    return out


def fmt(v, spec, dash="-"):
    return dash if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True, help="spmmv-bench --json files")
    ap.add_argument("--kpm-log", help="kpm-dos output (stdout + stderr)")
    ap.add_argument("--kpm-wall", type=float, help="kpm-dos process wall time in s")
    ap.add_argument("--kpm-command", default="", help="the kpm-dos command line, for the record")
    ap.add_argument("--out-dir", default="docs/perf")
    a = ap.parse_args()

    runs = [json.load(open(p)) for p in a.runs]
    first = runs[0]
    mach = first["machine"]
    peak = mach["peak_gflops"]
    b_runs = [r["stream_gb_s"] for r in runs]
    b_end_runs = [r.get("stream_gb_s_end") for r in runs]
    bw = statistics.median(b_runs)

    # Per (op, R): median over runs of the per-run median time.
    times, meta = {}, {}
    for run in runs:
        for row in run["results"]:
            key = (row["op"], row["R"])
            times.setdefault(key, []).append(row["seconds"])
            meta[key] = row
    llc = {}
    for run in runs:
        for row in run.get("llc", {}).get("results", []):
            key = (row["op"], row["R"])
            llc[key] = max(llc.get(key, 0.0), row["gflops"])  # a capability: the best run
    ops = []
    for run in runs:
        for row in run["results"]:
            if row["op"] not in ops:
                ops.append(row["op"])
    widths = sorted({k[1] for k in times})

    rows = []
    t1 = {}
    for r in widths:
        naive_t = None
        for op in ops:
            key = (op, r)
            if key not in times:
                continue
            t = statistics.median(times[key])
            row = meta[key]
            flops, own = row["flops"], row["own_bytes"]
            gf = flops / t * 1e-9
            p_mem = bw / b_min(r, is_single(op))
            pstar = min(peak, p_mem)
            if r == 1:
                t1[op] = t
            if op == "naive":
                naive_t = t
            pl = llc.get(key)
            rows.append({
                "op": op, "name": row["name"], "R": r, "tile_cells": row.get("tile_cells", 0),
                "seconds": t, "seconds_runs": times[key],
                "gflops": gf, "gb_s": own / t * 1e-9, "b_min": b_min(r, is_single(op)), "memory_roofline_gflops": p_mem,
                "roofline_gflops": pstar, "meas_over_roofline": gf / pstar, "omega": t * bw * 1e9 / own,
                "own_roofline_gflops": min(peak, bw * flops / own), "llc_gflops": pl,
                "meas_over_llc": gf / pl if pl else None, "meas_over_peak": gf / peak,
                "speedup_per_vector_moment_vs_r1": t1[op] * r / t if op in t1 else None,
                "speedup_vs_naive": naive_t / t if naive_t else None,
            })

    # sigma scan: median over runs of the R = 1 time.
    sigma = {}
    for run in runs:
        for s in run.get("sigma_scan", []):
            sigma.setdefault((s["C"], s["sigma"]), []).append(s)
    sigma_rows = []
    for (c, sg), lst in sorted(sigma.items()):
        t = statistics.median(x["r1_seconds"] for x in lst)
        sigma_rows.append({"C": c, "sigma": sg, "sigma_is_n": lst[0]["sigma_is_n"], "beta": lst[0]["beta"],
                           "storage_mib": lst[0]["storage_mib"], "r1_seconds": t,
                           "r1_gflops": lst[0]["r1_gflops"] * lst[0]["r1_seconds"] / t})

    kpm = parse_kpm_log(a.kpm_log, a.kpm_wall) if a.kpm_log else None
    if kpm:
        kpm["command"] = a.kpm_command

    merged = {
        "note": "medians over %d spmmv-bench runs (each the median of %d sweeps); b = median of the runs' "
                "start triads; P_LLC = best run" % (len(runs), first["reps"]),
        "machine": mach, "threads": first["threads"], "stream_gb_s": bw, "stream_gb_s_runs": b_runs,
        "stream_gb_s_end_runs": b_end_runs,
        "load_average_runs": [[r.get("load_average_start"), r.get("load_average_end")] for r in runs],
        "lattice": first["lattice"], "rows": first["rows"], "nonzeros": first["nonzeros"],
        "llc_lattice": first.get("llc", {}).get("lattice"), "results": rows, "sigma_scan": sigma_rows,
        "kpm_dos": kpm, "sources": a.runs,
    }
    with open(f"{a.out_dir}/cpu_spmmv.json", "w") as f:
        json.dump(merged, f, indent=1)

    # ---- markdown table ----
    L = []
    lat = "x".join(str(v) for v in first["lattice"])
    L.append(f"Machine: {mach['cpu_model']} ({mach['uarch']}), {first['threads']} threads on "
             f"{mach['cores_used']} core(s); SIMD path {mach['isa']}.  ")
    L.append(f"P_peak = {mach['peak_derivation']} = {peak:.1f} Gflop/s (clock from {mach['clock_source']}).  ")
    L.append(f"b = {bw:.1f} GB/s (median of the start triads of {len(runs)} runs: "
             + ", ".join(f"{v:.1f}" for v in b_runs) + " GB/s; at the runs' ends: "
             + ", ".join(fmt(v, ".1f") for v in b_end_runs) + " GB/s).  ")
    if any(x.get("tile_cells") for x in rows):
        L.append("Ops ending in t: the same SELL matrix swept in y tiles of Ty cells (outer) by x planes "
                 "(inner), each thread on its static-split rows (numerics/sparse/sell_schedule.hpp); "
                 "no Ty: the plain static order at that R.  ")
    L.append(f"ti {lat}: N = {first['rows']} rows, N_nz = {first['nonzeros']:.0f} "
             f"({first['nonzeros'] / first['rows']:.2f} per row). Times: median over {len(runs)} runs of the "
             f"median of {first['reps']} sweeps. P_LLC: ti "
             + "x".join(str(v) for v in first.get("llc", {}).get("lattice", [])) + " (in cache), best run.")
    L.append("")
    L.append("| op | R | t [ms] | Gflop/s | B_min [B/flop] | P* [Gflop/s] | meas/P* | Omega | P_LLC [Gflop/s] "
             "| meas/P_LLC | meas/P_peak | per vector-moment vs R=1 | vs naive |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for x in rows:
        op = x["op"] + (f" (Ty {x['tile_cells']})" if x.get("tile_cells") else "")
        L.append(f"| {op} | {x['R']} | {x['seconds'] * 1e3:.1f} | {x['gflops']:.2f} | {x['b_min']:.3f} | "
                 f"{x['roofline_gflops']:.1f} | {100 * x['meas_over_roofline']:.0f} % | {x['omega']:.2f} | "
                 f"{fmt(x['llc_gflops'], '.1f')} | "
                 f"{fmt(None if x['meas_over_llc'] is None else 100 * x['meas_over_llc'], '.0f')}"
                 f"{'' if x['meas_over_llc'] is None else ' %'} | {100 * x['meas_over_peak']:.1f} % | "
                 f"{fmt(x['speedup_per_vector_moment_vs_r1'], '.2f')}x | {fmt(x['speedup_vs_naive'], '.2f')}x |")
    if sigma_rows:
        L.append("")
        L.append("SELL-C-σ fill efficiency β = N_nz / stored entries, storage, and the R = 1 sweep (median):")
        L.append("")
        L.append("| C | σ | β | storage [MiB] | t(R=1) [ms] | Gflop/s |")
        L.append("|--:|--:|--:|--:|--:|--:|")
        for s in sigma_rows:
            sg = f"{s['sigma']} (N)" if s["sigma_is_n"] else str(s["sigma"])
            L.append(f"| {s['C']} | {sg} | {s['beta']:.4f} | {s['storage_mib']:.1f} | {s['r1_seconds'] * 1e3:.2f} | "
                     f"{s['r1_gflops']:.2f} |")
    if kpm:
        L.append("")
        ph = ", ".join(f"{k} {v:.2f} s" for k, v in kpm["phases_seconds"].items())
        L.append(f"kpm-dos `{kpm['command']}`: {kpm.get('model', '')}; {kpm.get('operator', '').split(',')[0]}, "
                 f"{kpm.get('sweeps', '?')} sweeps of width {kpm.get('width', '?')}: wall time "
                 f"{kpm['wall_seconds_process']:.1f} s (process), {kpm['total_seconds']:.1f} s (its own total: {ph}); "
                 f"kernel (moments) fraction {100 * kpm['kernel_fraction']:.1f} %, "
                 f"{kpm.get('kernel_gflops', float('nan')):.2f} Gflop/s in the kernel.")
    with open(f"{a.out_dir}/cpu_table.md", "w") as f:
        f.write("\n".join(L) + "\n")

    # ---- plot ----
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.5, 5.0))
    rr = [2 ** (k / 8) for k in range(0, 8 * 5 + 1)]
    ax.plot(rr, [min(peak, bw / b_min(r)) for r in rr], "k-", lw=2, label=f"model P* = min(P_peak, b/B_min(R)), b = {bw:.1f} GB/s")
    if any(is_single(op) for op in ops):
        ax.plot(rr, [min(peak, bw / b_min(r, True)) for r in rr], "k-.", lw=1.5,
                label="model P* in single precision (B_min = (156/R + 24)/138)")
    ax.axhline(peak, color="gray", ls="--", label=f"P_peak = {peak:.1f} Gflop/s ({mach['isa']}, {mach['cores_used']} cores)")
    # "sell-32t", "sell-8t": the same matrices with the cache-blocked (y-tiled) sweep order.
    markers = {"naive": "v", "sell-32": "o", "sell-8": "s", "sell-32t": "D", "sell-8t": "P", "sell-8ts": "X", "free": "^", "frees": "*"}
    for i, op in enumerate(ops):
        pts = [(x["R"], x["gflops"]) for x in rows if x["op"] == op]
        lo = [(min(times[(op, r)]), max(times[(op, r)])) for r, _ in pts]
        flops = [meta[(op, r)]["flops"] for r, _ in pts]
        yerr = [[g - f / hi * 1e-9 for (r, g), f, (lo_, hi) in zip(pts, flops, lo)],
                [f / lo_ * 1e-9 - g for (r, g), f, (lo_, hi) in zip(pts, flops, lo)]]
        line = ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=yerr, marker=markers.get(op, "o"),
                           ls="-", capsize=3, label=f"measured {op}")
        llc_pts = sorted((r, g) for (o, r), g in llc.items() if o == op)
        if llc_pts:
            ax.plot([p[0] for p in llc_pts], [p[1] for p in llc_pts], ls=":", marker=markers.get(op, "o"),
                    mfc="none", color=line[0].get_color(), label=f"P_LLC {op} (in-cache lattice)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(widths)
    ax.set_xticklabels([str(w) for w in widths])
    ax.set_xlabel("block width R (vectors per sweep)")
    ax.set_ylabel("Gflop/s")
    ax.set_title(f"augmented SpMMV, ti {lat}, {first['threads']} threads, {mach['cpu_model']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: no point hidden
    fig.tight_layout()
    fig.savefig(f"{a.out_dir}/roofline.png", dpi=120)
    print(f"wrote {a.out_dir}/cpu_spmmv.json, {a.out_dir}/cpu_table.md, {a.out_dir}/roofline.png")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The Markdown tables of docs/record/results.md §7 from the tables of results/fashion-scale/.

    /usr/bin/python3 scripts/fashion_scale_tables.py [DIR]     (DIR: results/fashion-scale)

Only formats what `bash scripts/fashion_scale.sh report` computed (samples_summary.csv,
samples_complexity.csv, samples_ratios.csv, samples_alignment.csv) and adds the per-row columns
the summaries do not aggregate (cos_p16, the chosen lambda, kept epochs, wall times) from
samples.csv. Standard library only (Debian's python3 or any other)."""
import csv
import math
import statistics
import sys
from collections import defaultdict

ROOT = sys.argv[1] if len(sys.argv) > 1 else "results/fashion-scale"
ORDER = ["ntk", "ntk-xent", "p16", "p16-xent:balanced+balanced", "p16-xent:sq",
         "ntk-sgd", "factorized-sgd", "network"]
SHORT = {"p16-xent:balanced+balanced": "p16-xent bb", "p16-xent:sq": "p16-xent sq",
         "p16": "p16 interp.", "ntk": "NTK interp."}
PROTOCOLS = [("fair", "fair"), ("authors", "authors'")]


def read(protocol, name):
    try:
        with open(f"{ROOT}/{protocol}/{name}", newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def mean_std(values, digits=3):
    v = [x for x in values if not math.isnan(x)]
    if not v:
        return "–"
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    return f"{statistics.mean(v):.{digits}f} ± {statistics.stdev(v):.{digits}f}"


def methods_of(rows):
    seen = {r["method"] for r in rows}
    return [m for m in ORDER if m in seen] + sorted(seen - set(ORDER))


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def summary_table(protocol, label, column):
    summ = read(protocol, "samples_summary.csv")
    if not summ:
        return ""
    ms = methods_of(summ)
    cell = {(int(r["n"]), r["method"]): r for r in summ}
    ns = sorted({n for n, _ in cell})
    rows = []
    for n in ns:
        line = [f"{n}"]
        for m in ms:
            r = cell.get((n, m))
            if not r or r["runs"] == "0" or math.isnan(num(r[column + "_mean"])):
                line.append("–")
                continue
            spread = f" ± {num(r[column + '_std']):.3f}" if r["runs"] != "1" else ""
            line.append(f"{num(r[column + '_mean']):.3f}{spread} ({r['runs']})")
        if any(c != "–" for c in line[1:]):  # sizes with skipped rows only are left out
            rows.append(line)
    return f"{label} ({protocol}):\n\n" + table(["n"] + [SHORT.get(m, m) for m in ms], rows)


def status_table():
    lines = []
    for protocol, _ in PROTOCOLS:
        for r in read(protocol, "samples_summary.csv"):
            if r["statuses"] not in ("", "-"):
                lines.append([protocol, r["n"], SHORT.get(r["method"], r["method"]),
                              r["statuses"]])
    return table(["protocol", "n", "model", "statuses"], lines)


def complexity_table(protocol):
    rows = read(protocol, "samples_complexity.csv")
    if not rows:
        return ""
    ths = sorted({r["threshold"] for r in rows}, key=lambda t: -float(t))
    cell = {(r["method"], r["threshold"]): r for r in rows}
    out = []
    for m in methods_of(rows):
        line = [SHORT.get(m, m)]
        for t in ths:
            r = cell[(m, t)]
            s = r["mean_curve"]
            if not math.isnan(num(r["n_star_mean_curve"])):
                s = ("≤ " if s == "below" else "") + f"{num(r['n_star_mean_curve']):.0f}"
            if r["seeds_reached"] not in ("0", "") and not math.isnan(num(r["n_star_geomean"])):
                s += (f"; seeds {num(r['n_star_geomean']):.0f} [{num(r['n_star_min']):.0f}, "
                      f"{num(r['n_star_max']):.0f}], {r['seeds_reached']}/{r['seeds']}")
            line.append(s)
        out.append(line)
    return table(["model"] + [f"error ≤ {t}" for t in ths], out)


def ratio_interval(r):
    """The mean curves' ratio: exact, a bound ('≥', '≤'), or None (open)."""
    lo, hi = num(r["ratio_mean_lo"]), num(r["ratio_mean_hi"])
    if math.isnan(lo) or (lo == 0 and math.isinf(hi)):
        return None
    if lo == hi:
        return f"{lo:.2f}"
    return f"≥ {lo:.2f}" if math.isinf(hi) else f"≤ {hi:.2f}" if lo == 0 else \
        f"{lo:.2f} – {hi:.2f}"


def ratio_table(protocol):
    rows = [r for r in read(protocol, "samples_ratios.csv")
            if ratio_interval(r) or r["seeds_both"] not in ("0", "")]
    if not rows:
        return "(no pair of models has a bounded ratio at the sizes recorded so far)"
    out = []
    for r in rows:
        seeds = "–"
        if r["seeds_both"] not in ("0", ""):
            seeds = (f"{num(r['ratio_geomean_seeds']):.2f} [{num(r['ratio_min']):.2f}, "
                     f"{num(r['ratio_max']):.2f}] ({r['seeds_both']})")
        out.append([SHORT.get(r["fixed"], r["fixed"]), SHORT.get(r["adaptive"], r["adaptive"]),
                    r["threshold"], ratio_interval(r) or "–", seeds])
    return table(["fixed", "adaptive", "level", "n*_fixed / n*_adaptive (mean curves)",
                  "per seed: geometric mean [range] (seeds)"], out)


def by_point(protocol):
    """samples.csv rows grouped by (n, method)."""
    groups = defaultdict(list)
    for r in read(protocol, "samples.csv"):
        groups[(int(r["n"]), r["method"])].append(r)
    return groups


def sgd_table():
    out = []
    for protocol, _ in PROTOCOLS:
        g = by_point(protocol)
        for n in sorted({n for n, _ in g}):
            for m in ("ntk-sgd", "factorized-sgd", "network"):
                rs = [r for r in g.get((n, m), []) if r["status"] == "trained"]
                if not rs:
                    continue
                ep = [int(r["selected_epoch"]) for r in rs]
                cos = [num(r["cos_p16"]) for r in rs]
                out.append([protocol, f"{n}", m, f"{statistics.mean(ep):.0f} ({min(ep)}–{max(ep)})",
                            mean_std(cos, 2), mean_std([num(r["omega_balanced"]) for r in rs], 0),
                            mean_std([num(r["drift"]) for r in rs], 3)])
    return table(["protocol", "n", "model", "kept epoch: mean (range)",
                  "cos(B, B of p16-xent bb)", "Σω̃ bb of B", "drift"], out)


def lambda_table():
    g = by_point("fair")
    out = []
    for n in sorted({n for n, _ in g}):
        for m in ("ntk-xent", "p16-xent:balanced+balanced", "p16-xent:sq"):
            rs = [r for r in g.get((n, m), []) if r["status"] == "solved"]
            if not rs:
                continue
            nfit = n - round(n / 10) if n >= 10 else n
            per_ex = sorted(f"{num(r['lambda']) / nfit:.0e}" for r in rs)
            counts = defaultdict(int)
            for p in per_ex:
                counts[p] += 1
            chosen = ", ".join(f"{p} ×{c}" for p, c in
                               sorted(counts.items(), key=lambda pc: -float(pc[0])))
            out.append([f"{n}", SHORT.get(m, m), chosen,
                        mean_std([num(r["val_xent"]) for r in rs], 3),
                        f"{max(num(r['stationarity']) for r in rs):.1e}",
                        f"{statistics.median(num(r['seconds']) for r in rs):.0f}"])
    return table(["n", "model", "λ per fitted example (seeds)", "validation cross-entropy",
                  "largest stationarity", "median s / row (whole path)"], out)


def alignment_table(protocol):
    rows = read(protocol, "samples_alignment.csv")
    if not rows:
        return ""
    out = []
    for r in rows:
        if r["seeds"] == "0":
            continue
        adapted = "–" if math.isnan(num(r["adapted_mean"])) else \
            f"{num(r['adapted_mean']):.3f} ± {num(r['adapted_std']):.3f}"
        out.append([r["n"], r["layer"], r["seeds"],
                    f"{num(r['k0_mean']):.3f} ± {num(r['k0_std']):.3f}", adapted])
    return table(["n", "layer", "seeds", "cos(K0, K_net)", "cos(K_16, K_net)"], out)


def wall_table():
    out = []
    for protocol, _ in PROTOCOLS:
        g = by_point(protocol)
        for n in sorted({n for n, _ in g}):
            cells = []
            total = 0.0
            for m in ORDER:
                rs = [r for r in g.get((n, m), []) if r["status"] != "skipped"]
                if not rs:
                    continue
                s = sum(x for x in (num(r["seconds"]) for r in rs) if not math.isnan(x))
                total += s
                cells.append(f"{SHORT.get(m, m)} {s / 60:.0f}")
            seeds = len({r["seed"] for rs in (g.get((n, m), []) for m in ORDER) for r in rs})
            if not cells:
                continue
            out.append([protocol, f"{n}", f"{seeds}", f"{total / 60:.0f}", ", ".join(cells)])
    return table(["protocol", "n", "seeds", "rows' minutes", "per model (minutes, all seeds)"],
                 out)


def main():
    sections = [
        ("Test error", [summary_table(p, "Test error", "test_error") for p, _ in PROTOCOLS]),
        ("Test cross-entropy", [summary_table(p, "Test cross-entropy", "test_xent")
                                for p, _ in PROTOCOLS]),
        ("Statuses", [status_table()]),
        ("Sample complexity, fair", [complexity_table("fair")]),
        ("Sample complexity, authors'", [complexity_table("authors")]),
        ("Ratios, fair", [ratio_table("fair")]),
        ("Ratios, authors'", [ratio_table("authors")]),
        ("Chosen λ", [lambda_table()]),
        ("SGD models", [sgd_table()]),
        ("Alignment, fair", [alignment_table("fair")]),
        ("Alignment, authors'", [alignment_table("authors")]),
        ("Wall time", [wall_table()]),
    ]
    for title, parts in sections:
        print(f"### {title}\n")
        for p in parts:
            if p:
                print(p + "\n")


if __name__ == "__main__":
    main()

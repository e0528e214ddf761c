#!/usr/bin/env python3
"""Issue 47: p16-xent's penalty family and scale chosen on validation data, against ntk-xent.

Reads the table of scripts/fashion_tuned.sh (results/fashion-tuned/samples.csv) and prints, per
(n, seed), the p16-xent setting (family, γ) of the lowest validation cross-entropy (λ is already
the path's choice on the same validation rows, per setting) and, as a second rule, of the lowest
validation error (ties broken by the validation cross-entropy); its test error against
ntk-xent's on the same seed; every setting's means; and the test-error gap to ntk-xent along
the sq axis. Only rows whose status is `solved` (certified) are candidates; every other row is
listed with its status. Writes the per-seed choices and the per-setting means next to the table
(tuned_seeds.csv, tuned_settings.csv).

    /usr/bin/python3 scripts/fashion_tuned_select.py [results/fashion-tuned] [--fair FAIR.csv]
                                                      [--n N]

With --n N only the rows of n = N are read and the two files are tuned_seeds_nN.csv and
tuned_settings_nN.csv (the table holds several n: the report step runs it once per n).
"""
import csv
import math
import os
import re
import statistics as st
import sys
from collections import defaultdict

args = [a for a in sys.argv[1:]]
fair = "results/fashion-scale/fair/samples.csv"
if "--fair" in args:
    i = args.index("--fair")
    fair = args[i + 1]
    del args[i:i + 2]
only_n = None
if "--n" in args:
    i = args.index("--n")
    only_n = int(args[i + 1])
    del args[i:i + 2]
out = args[0] if args else "results/fashion-tuned"
table = os.path.join(out, "samples.csv")
rows = [r for r in csv.DictReader(open(table, newline=""))
        if only_n is None or int(r["n"]) == only_n]
if not rows:
    sys.exit(f"fashion_tuned_select: {table}: no rows" + (f" at n = {only_n}" if only_n else ""))
suffix = f"_n{only_n}" if only_n is not None else ""


def setting(method):
    """p16-xent:FAMILY[:scale=G] -> the penalty spec, or None for other models."""
    return method[len("p16-xent:"):] if method.startswith("p16-xent:") else None


def gamma(spec):
    m = re.search(r"scale=([0-9.eE+-]+)", spec)
    return float(m.group(1)) if m else 1.0


def family(spec):
    return spec.split(":")[0]


def fmt_pts(d):
    return f"{d:+.2f}"


def mean_sd(xs, k=4):
    if not xs:
        return "–"
    if len(xs) == 1:
        return f"{xs[0]:.{k}f}"
    return f"{st.mean(xs):.{k}f} ± {st.stdev(xs):.{k}f}"


ntk = {}                       # (n, seed) -> row
p16 = defaultdict(dict)        # (n, seed) -> spec -> row
other = []                     # rows not solved
for r in rows:
    key = (int(r["n"]), int(r["seed"]))
    if r["method"] == "ntk-xent":
        ntk[key] = r
    elif setting(r["method"]) is not None:
        p16[key][setting(r["method"])] = r
    if r["status"] != "solved":
        other.append(r)

ORDER = ["sq", "zsq", "logsq", "pow", "abs", "nuclear", "balanced"]
specs = sorted({s for d in p16.values() for s in d},
               key=lambda s: (ORDER.index(family(s)) if family(s) in ORDER else len(ORDER),
                              family(s), gamma(s), s))
print(f"# {table}: {len(rows)} rows, {len(ntk)} ntk-xent, "
      f"{sum(len(d) for d in p16.values())} p16-xent in {len(specs)} settings")
if other:
    print("\nRows not `solved` (not candidates):")
    for r in other:
        print(f"  {r['key']}: status {r['status']}, stationarity {r['stationarity']}, "
              f"{float(r['seconds']):.0f} s")
else:
    print("Every row's status is `solved`.")
stat = [float(r["stationarity"]) for r in rows if r["status"] == "solved"]
print(f"Certificates of the solved rows (stationarity, the pg residual): max {max(stat):.2e}")

# ---- per seed: the choice on validation -------------------------------------------------
def choose(cands, rule):
    if rule == "val_xent":
        return min(cands, key=lambda s: (float(cands[s]["val_xent"]), s))
    return min(cands, key=lambda s: (float(cands[s]["val_error"]), float(cands[s]["val_xent"]), s))


seed_rows = []
results = {}
for rule in ("val_xent", "val_error", "test (not a selection: the best any setting did)"):
    print(f"\n## Chosen by {rule}" if not rule.startswith("test") else f"\n## Best on {rule}")
    print("| n | seed | chosen | λ | val xent | val error | test error | ntk-xent test "
          "| ntk-xent val xent | gap (pts) | settings solved |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    diffs, picks, tests = [], defaultdict(int), []
    for key in sorted(p16):
        cands = {s: r for s, r in p16[key].items() if r["status"] == "solved"}
        if not cands or key not in ntk or ntk[key]["status"] != "solved":
            continue
        if rule.startswith("test"):
            s = min(cands, key=lambda s: (float(cands[s]["test_error"]), s))
        else:
            s = choose(cands, rule)
        r, b = cands[s], ntk[key]
        d = 100 * (float(r["test_error"]) - float(b["test_error"]))
        diffs.append(d)
        tests.append(float(r["test_error"]))
        picks[s] += 1
        print(f"| {key[0]} | {key[1]} | {s} | {float(r['lambda']):g} | {float(r['val_xent']):.4f} "
              f"| {float(r['val_error']):.2f} | {float(r['test_error']):.4f} "
              f"| {float(b['test_error']):.4f} | {float(b['val_xent']):.4f} | {fmt_pts(d)} "
              f"| {len(cands)} of {len(p16[key])} |")
        tag = rule.split(" ")[0]
        seed_rows.append({"rule": tag, "n": key[0], "seed": key[1], "chosen": s,
                          "lambda": r["lambda"], "val_xent": r["val_xent"],
                          "val_error": r["val_error"], "test_error": r["test_error"],
                          "ntk_xent_test_error": b["test_error"],
                          "ntk_xent_val_xent": b["val_xent"],
                          "ntk_xent_val_error": b["val_error"],
                          "gap_points": f"{d:.2f}", "candidates": len(cands)})
    if diffs:
        ahead, behind = sum(d < 0 for d in diffs), sum(d > 0 for d in diffs)
        sd = f" ± {st.stdev(diffs):.2f}" if len(diffs) > 1 else ""
        print(f"\nchosen − ntk-xent, test error: {st.mean(diffs):+.2f}{sd} points over "
              f"{len(diffs)} seeds; ahead of ntk-xent in {ahead}, behind in {behind}, level in "
              f"{len(diffs) - ahead - behind}; |gap| < 0.1 points (10 test images) in "
              f"{sum(abs(d) < 0.1 for d in diffs)}")
        print(f"test error of the chosen settings: {mean_sd(tests)}")
        print("settings chosen: " + ", ".join(f"{s} ({c})" for s, c in
                                              sorted(picks.items(), key=lambda x: -x[1])))
    results[rule] = diffs

# Would validation itself prefer the fixed features? (ntk-xent is the γ → ∞ end, not a
# candidate above.)
lower = tot = 0
for key in sorted(p16):
    cands = {s: r for s, r in p16[key].items() if r["status"] == "solved"}
    if cands and key in ntk:
        s = choose(cands, "val_xent")
        tot += 1
        lower += float(ntk[key]["val_xent"]) < float(cands[s]["val_xent"])
print(f"\nntk-xent's validation cross-entropy is below the chosen setting's in {lower} of {tot} "
      "seeds")

# ---- per setting ---------------------------------------------------------------------------
print("\n## Every setting (solved rows), against ntk-xent on the same seeds")
print("| setting | γ | seeds solved | test error | val xent | val error | λ chosen "
      "| gap to ntk-xent (pts) | behind / ahead | chosen (val xent) | seconds |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
chosen_xent = defaultdict(int)
for r in seed_rows:
    if r["rule"] == "val_xent":
        chosen_xent[r["chosen"]] += 1
setting_rows = []
base = [r for r in ntk.values() if r["status"] == "solved"]
lines = [("ntk-xent", base, None)] + [
    (s, [p16[k][s] for k in sorted(p16) if s in p16[k]], s) for s in specs]
for name, rs, s in lines:
    ok = [r for r in rs if r["status"] == "solved"]
    te = [float(r["test_error"]) for r in ok]
    vx = [float(r["val_xent"]) for r in ok]
    ve = [float(r["val_error"]) for r in ok]
    lam = sorted({f"{float(r['lambda']):g}" for r in ok}, key=float)
    secs = [float(r["seconds"]) for r in rs]
    gaps = [100 * (float(r["test_error"]) - float(ntk[(int(r["n"]), int(r["seed"]))]["test_error"]))
            for r in ok if s is not None and (int(r["n"]), int(r["seed"])) in ntk]
    gap = (f"{st.mean(gaps):+.2f} ± {st.stdev(gaps):.2f}" if len(gaps) > 1 else
           (fmt_pts(gaps[0]) if gaps else "–"))
    behind = (f"{sum(g > 0 for g in gaps)} / {sum(g < 0 for g in gaps)} of {len(gaps)}"
              if gaps else "–")
    g = "∞ (fixed)" if s is None else f"{gamma(s):g}"
    print(f"| {name} | {g} | {len(ok)} of {len(rs)} | {mean_sd(te)} | {mean_sd(vx)} "
          f"| {mean_sd(ve, 3)} | {', '.join(lam)} | {gap} | {behind} "
          f"| {chosen_xent.get(s, 0) if s else '–'} | {sum(secs):.0f} |")
    setting_rows.append({
        "setting": name, "family": family(name) if s else "fixed", "gamma": g,
        "rows": len(rs), "solved": len(ok),
        "test_error_mean": f"{st.mean(te):.5f}" if te else "",
        "test_error_sd": f"{st.stdev(te):.5f}" if len(te) > 1 else "",
        "val_xent_mean": f"{st.mean(vx):.5f}" if vx else "",
        "val_error_mean": f"{st.mean(ve):.5f}" if ve else "",
        "lambdas_chosen": " ".join(lam),
        "gap_points_mean": f"{st.mean(gaps):.3f}" if gaps else "",
        "gap_points_sd": f"{st.stdev(gaps):.3f}" if len(gaps) > 1 else "",
        "seeds_behind": sum(g > 0 for g in gaps) if gaps else "",
        "seeds_ahead": sum(g < 0 for g in gaps) if gaps else "",
        "chosen_by_val_xent": chosen_xent.get(s, 0) if s else "",
        "seconds": f"{sum(secs):.1f}"})

# ---- the sq axis ------------------------------------------------------------------------
print("\n## The sq axis: mean test-error gap to ntk-xent (points) against γ")
axis = sorted([s for s in specs if family(s) == "sq"], key=gamma)
for s in axis:
    gaps = [100 * (float(p16[k][s]["test_error"]) - float(ntk[k]["test_error"]))
            for k in sorted(p16) if s in p16[k] and p16[k][s]["status"] == "solved" and k in ntk]
    vg = [float(p16[k][s]["val_xent"]) - float(ntk[k]["val_xent"])
          for k in sorted(p16) if s in p16[k] and p16[k][s]["status"] == "solved" and k in ntk]
    if gaps:
        sd = f" ± {st.stdev(gaps):.2f}" if len(gaps) > 1 else ""
        print(f"  γ = {gamma(s):>7g}: test {st.mean(gaps):+.2f}{sd} pts "
              f"(behind in {sum(g > 0 for g in gaps)} of {len(gaps)}, ahead in "
              f"{sum(g < 0 for g in gaps)}); val xent {st.mean(vg):+.4f} "
              f"(above ntk-xent's in {sum(v > 0 for v in vg)} of {len(vg)})")

# ---- the same seeds in the study's fair table --------------------------------------------
if os.path.exists(fair):
    f = {(int(r["n"]), int(r["seed"]), r["method"]): r for r in csv.DictReader(open(fair))}
    print(f"\n## Against {fair} (same n and seed)")
    for m in ["ntk-xent"] + ["p16-xent:" + s for s in specs]:
        d = [(k, float(r["test_error"]), float(f[(k[0], k[1], m)]["test_error"]))
             for k, r in ((k, ntk[k] if m == "ntk-xent" else p16[k].get(m[9:]))
                          for k in sorted(p16)) if r and (k[0], k[1], m) in f]
        if d:
            print(f"  {m}: {len(d)} seeds, largest |test error here − there| = "
                  f"{max(abs(a - b) for _, a, b in d):.4f}")

for name, data in ((f"tuned_seeds{suffix}.csv", seed_rows),
                   (f"tuned_settings{suffix}.csv", setting_rows)):
    if data:
        with open(os.path.join(out, name), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(data[0]))
            w.writeheader()
            w.writerows(data)
print(f"\nwrote {out}/tuned_seeds{suffix}.csv and {out}/tuned_settings{suffix}.csv")

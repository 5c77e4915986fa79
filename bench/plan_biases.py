#!/usr/bin/env python3
"""Which plan features the cost model misprices, pooled over calibration runs.

One calibration run has 24 plans, and each plan's measured time carries a
few percent of noise, so one run cannot tell a mispriced feature (ZeRO-3,
tp=4, sequence parallelism) from bad luck. Pooled over the stored runs it
can. calibration_replay.py --biases fits

    log(measured / predicted) = run level + sum of feature effects + noise

by least squares over every plan of every run. A run's level absorbs the
machine's speed that day (runs differ by 15-30%), so an effect is a bias
relative to the other plans of the same run -- what the rank correlation
sees. The features come from the plan's --fix knobs alone:

  - mesh: the parallel axes above 1 (`dp2 pp2`), one category each; the most
    common shape is the baseline;
  - every other knob with a category each for its values, the knob's
    default (zero=0, sp=off, recompute none, schedule=1f1b) the baseline;
    the interleaved schedule's categories are one per vpp;
  - log2 of the microbatch size, one number.

It prints each effect with its standard error, the residual spread, and each
run's tau with the fitted effects taken out of the predictions: an in-sample
bound on what correcting these biases could buy, not a prediction.

Python 3 standard library only. `python3 bench/plan_biases.py --self-test`
recovers planted effects from synthetic runs
(test/Tools/bench-plan-biases.test).
"""

import math
import random
import statistics
import sys

# Knob values that are the baseline of their knob's categories.
DEFAULTS = {"zero": "0", "sp": "off", "schedule": "1f1b",
            "recompute": "none", "precision": "fp32", "cp": "1", "ep": "1"}
MESH_AXES = ("dp", "tp", "pp", "cp", "ep")
IGNORED = {"microbatch"}


def parse_knobs(knobs):
    out = {}
    for item in knobs.split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def recompute_label(value):
    """recompute=none/none/full/full (per stage) -> the set of modes used."""
    modes = sorted(set(value.split("/")) - {"none"})
    return "+".join(modes) if modes else "none"


def features(knobs):
    """Categorical features ({name: level}) and log2 microbatch of a plan."""
    k = parse_knobs(knobs)
    cats = {}
    mesh = [a + k[a] for a in MESH_AXES if k.get(a, "1") != "1"]
    cats["mesh"] = " ".join(mesh) if mesh else "single"
    for name, value in sorted(k.items()):
        if name in MESH_AXES or name in IGNORED:
            continue
        if name == "recompute":
            value = recompute_label(value)
        if name == "schedule" and k.get("pp", "1") == "1":
            continue  # no pipeline: the schedule does not exist
        if name == "schedule" and value == "interleaved":
            value += " vpp" + k.get("vpp", "1")
        if name == "vpp":
            continue  # part of the interleaved schedule's category
        cats[name] = value
    mb = float(k.get("microbatch", "1"))
    return cats, math.log2(mb) if mb > 0 else 0.0


def design(runs):
    """runs: [[(knobs, log ratio), ...], ...]. Returns (column names, rows,
    ys, run index of each row)."""
    counts = {}
    parsed = []
    for r, rows in enumerate(runs):
        for knobs, y in rows:
            cats, lmb = features(knobs)
            parsed.append((r, cats, lmb, y))
            for name, level in cats.items():
                counts.setdefault(name, {}).setdefault(level, 0)
                counts[name][level] += 1
    columns = []
    for name in sorted(counts):
        levels = counts[name]
        if name == "mesh":
            base = max(sorted(levels), key=lambda l: levels[l])
        else:
            base = DEFAULTS.get(name, max(sorted(levels),
                                          key=lambda l: levels[l]))
        for level in sorted(levels):
            if level != base:
                columns.append((name, level))
    names = ["%s=%s" % c if c[0] != "mesh" else c[1] for c in columns]
    names.append("log2 microbatch")
    xs, ys, which = [], [], []
    nruns = len(runs)
    for r, cats, lmb, y in parsed:
        row = [1.0 if cats.get(n) == l else 0.0 for n, l in columns]
        row.append(lmb)
        row += [1.0 if j == r else 0.0 for j in range(nruns)]
        xs.append(row)
        ys.append(y)
        which.append(r)
    return names, xs, ys, which


def solve_least_squares(xs, ys, ridge=1e-9):
    """Coefficients and their covariance factor (X'X)^-1, by Gauss-Jordan
    on the normal equations. A tiny ridge keeps a column that never varies
    (a feature absent from the runs) from making them singular."""
    n = len(xs[0])
    a = [[sum(r[i] * r[j] for r in xs) + (ridge if i == j else 0.0)
          for j in range(n)] + [1.0 if k == i else 0.0 for k in range(n)]
         for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        pivot = a[c][c]
        if abs(pivot) < 1e-15:
            raise ValueError("the features are linearly dependent")
        a[c] = [v / pivot for v in a[c]]
        for r in range(n):
            if r != c and a[r][c] != 0.0:
                f = a[r][c]
                a[r] = [v - f * w for v, w in zip(a[r], a[c])]
    inverse = [row[n:] for row in a]
    xty = [sum(r[i] * y for r, y in zip(xs, ys)) for i in range(n)]
    beta = [sum(inverse[i][j] * xty[j] for j in range(n)) for i in range(n)]
    return beta, inverse


def fit(runs):
    """Feature effects (log scale) with standard errors, the residual sd,
    and each row's fitted feature part (without the run level)."""
    names, xs, ys, which = design(runs)
    if len(ys) <= len(xs[0]):
        raise ValueError("%d plans cannot fit %d features and %d run levels; "
                         "pool more runs" % (len(ys), len(names), len(runs)))
    beta, inverse = solve_least_squares(xs, ys)
    resid = [y - sum(b * x for b, x in zip(beta, row))
             for row, y in zip(xs, ys)]
    dof = max(1, len(ys) - len(beta))
    s2 = sum(r * r for r in resid) / dof
    nf = len(names)
    effects = [(names[i], beta[i], math.sqrt(max(0.0, s2 * inverse[i][i])))
               for i in range(nf)]
    feature_part = [sum(b * x for b, x in zip(beta[:nf], row[:nf]))
                    for row in xs]
    return effects, math.sqrt(s2), feature_part, which


def self_test():
    rng = random.Random(7)
    # dp2 pp2 twice as often: the baseline, as in the stored runs.
    meshes = ["dp=4,tp=1,pp=1", "dp=1,tp=4,pp=1", "dp=2,tp=1,pp=2",
              "dp=2,tp=1,pp=2", "dp=2,tp=2,pp=1", "dp=1,tp=2,pp=2",
              "dp=1,tp=1,pp=4"]
    planted = {"tp4": 0.06, "zero=3": -0.08, "sp=on": -0.03,
               "log2 microbatch": -0.01}
    runs = []
    for _ in range(14):
        level = rng.gauss(0.1, 0.08)
        rows = []
        for _ in range(24):
            mesh = rng.choice(meshes)
            zero = rng.choice("0123")
            sp = rng.choice(("on", "off"))
            mb = rng.choice((1, 2, 4, 8))
            knobs = "%s,zero=%s,sp=%s,microbatch=%d" % (mesh, zero, sp, mb)
            y = level + rng.gauss(0, 0.03)
            y += planted["tp4"] * ("tp=4" in knobs)
            y += planted["zero=3"] * (zero == "3")
            y += planted["sp=on"] * (sp == "on")
            y += planted["log2 microbatch"] * math.log2(mb)
            rows.append((knobs, y))
        runs.append(rows)
    effects, sd, _, _ = fit(runs)
    got = {n: (b, se) for n, b, se in effects}
    ok = True
    for name, want in planted.items():
        b, se = got[name]
        good = abs(b - want) < 4 * se + 1e-3
        ok &= good
        print("%-16s planted %+.3f fitted %+.3f +- %.3f %s" %
              (name, want, b, se, "ok" if good else "WRONG"))
    for name, (b, se) in sorted(got.items()):
        if name not in planted and abs(b) > 4 * se + 0.01:
            print("%-16s fitted %+.3f +- %.3f where nothing was planted" %
                  (name, b, se))
            ok = False
    good = abs(sd - 0.03) < 0.005
    ok &= good
    print("residual sd %.4f (planted 0.03) %s" % (sd, "ok" if good else
                                                  "WRONG"))
    print("self-test %s" % ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    print(__doc__)
    sys.exit(2)

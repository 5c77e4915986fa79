#!/usr/bin/env python3
"""Re-predict stored calibration runs with the current cost model.

A calibration run (runtime_calibration.py) takes about 25 minutes of an
otherwise idle machine, and this machine's speed drifts by 15-20% between
runs, so one run says little about a change to the cost model. The runs in
bench/data/calibration/ keep what a prediction needs -- the model, the
cluster, the profile measured at the start of the run, and every plan's
--fix knobs -- beside the step times measured then (each plan's time
fitted with the machine's drift taken out, block_effects.py). This script
compiles every plan again with the build's `cleave compile --profile`,
and prints per run the Kendall tau-b between predicted and measured times
and the median and largest |error|, then the mean and the smallest tau
over the runs and how many runs meet the calibration aim (median |error|
<= 15%, tau >= 0.8).

    python3 bench/calibration_replay.py                  # every stored run
    python3 bench/calibration_replay.py RUN.json ...     # some of them
    python3 bench/calibration_replay.py --plans          # every plan's error
    python3 bench/calibration_replay.py --min-mean-tau 0.75   # a gate: exit 1 below
    python3 bench/calibration_replay.py --biases         # mispriced plan features

--biases pools every plan of every run and fits which plan features (mesh
shape, ZeRO stage, sequence parallelism, schedule, recomputation,
microbatch size) the cost model misprices relative to the other plans of
a run (plan_biases.py).

A stored run: RUN.json with model, cluster, global_batch, optimizer,
profile (a file next to it) and rows of plan, knobs and measured_ms;
`runtime_calibration.py --record DIR` writes one. Python 3 standard
library only.
"""

import argparse
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

import plan_biases
from runtime_calibration import kendall_tau_b
from benchlib import DEFAULT_CLEAVE, ROOT

DEFAULT_RUNS = os.path.join(ROOT, "bench", "data", "calibration")
AIM_TAU, AIM_MEDIAN = 0.8, 15.0


class ReplayError(Exception):
    pass


def load_run(path):
    try:
        with open(path) as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        raise ReplayError("%s: cannot read the run: %s" % (path, e))
    for key in ("model", "cluster", "global_batch", "optimizer", "profile",
                "rows"):
        if key not in run:
            raise ReplayError("%s: no '%s'" % (path, key))
    if len(run["rows"]) < 2:
        raise ReplayError("%s: %d plans; tau needs at least 2" %
                          (path, len(run["rows"])))
    for i, row in enumerate(run["rows"]):
        for key in ("plan", "knobs", "measured_ms"):
            if key not in row:
                raise ReplayError("%s: plan %d has no '%s'" % (path, i + 1,
                                                                key))
        if not row["measured_ms"] > 0:
            raise ReplayError("%s: plan '%s': measured_ms must be positive" %
                              (path, row["plan"]))
    run["path"] = path
    run["profile_path"] = os.path.join(os.path.dirname(path), run["profile"])
    if not os.path.isfile(run["profile_path"]):
        raise ReplayError("%s: its profile '%s' is missing" %
                          (path, run["profile_path"]))
    return run


def predict(cleave, run, row):
    cmd = [cleave, "compile", run["model"], "--cluster", run["cluster"],
           "--global-batch", str(run["global_batch"]),
           "--optimizer", run["optimizer"], "--profile", run["profile_path"],
           "--fix", row["knobs"], "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise ReplayError("%s: plan '%s' (%s): cleave compile failed (%d): "
                          "%s" % (run["path"], row["plan"], row["knobs"],
                                  p.returncode, p.stderr.strip()[-500:]))
    return json.loads(p.stdout)["predicted"]["step_time_s"] * 1000


def summarize(pred, meas):
    errs = [(p / m - 1) * 100 for p, m in zip(pred, meas)]
    worst = max(range(len(errs)), key=lambda i: abs(errs[i]))
    return {
        "tau": kendall_tau_b(pred, meas),
        "median_abs_error_pct": statistics.median(abs(e) for e in errs),
        "median_signed_error_pct": statistics.median(errs),
        "max_abs_error_pct": abs(errs[worst]),
        "worst": worst,
    }


def print_biases(results):
    """Pooled feature biases and each run's tau with them taken out."""
    runs = [[(row["knobs"], math.log(row["measured_ms"] / p))
             for row, p in zip(s["rows"], s["predicted_ms"])]
            for s in results]
    effects, sd, feature_part, which = plan_biases.fit(runs)
    print("\nbiases over %d plans of %d runs (measured / predicted, relative "
          "to each run's level; + is slower than priced):" %
          (len(which), len(runs)))
    for name, b, se in sorted(effects, key=lambda e: e[1]):
        print("  %-26s %+6.1f%% +- %.1f%%" % (name, (math.exp(b) - 1) * 100,
                                             se * 100))
    print("  residual spread of a plan: %.1f%%" % (sd * 100))
    taus = []
    i = 0
    for s in results:
        n = len(s["predicted_ms"])
        adjusted = [p * math.exp(f) for p, f in
                    zip(s["predicted_ms"], feature_part[i:i + n])]
        i += n
        taus.append(kendall_tau_b(adjusted,
                                  [r["measured_ms"] for r in s["rows"]]))
    print("tau with the fitted biases taken out (in-sample, a bound): mean "
          "%.3f, smallest %.3f, %d of %d runs at %g or above" %
          (statistics.fmean(taus), min(taus),
           sum(1 for t in taus if t >= AIM_TAU), len(taus), AIM_TAU))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*",
                    help="stored runs (default: every *.json in %s)" %
                    os.path.relpath(DEFAULT_RUNS, ROOT))
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE,
                    help="the cleave binary (a name is looked up on PATH)")
    ap.add_argument("--plans", action="store_true",
                    help="print every plan's predicted and measured time")
    ap.add_argument("--json", help="write the per-run results here")
    ap.add_argument("--biases", action="store_true",
                    help="fit and print the plan features' pricing biases "
                    "pooled over the runs (plan_biases.py)")
    ap.add_argument("--min-mean-tau", type=float,
                    help="exit 1 when the mean tau over the runs is below")
    args = ap.parse_args()

    cleave = args.cleave
    if os.sep not in cleave:
        cleave = shutil.which(cleave) or cleave
    if not (os.path.isfile(cleave) and os.access(cleave, os.X_OK)):
        print("error: --cleave '%s' is not an executable (build the cleave "
              "target)" % args.cleave, file=sys.stderr)
        return 2
    paths = args.runs or sorted(glob.glob(os.path.join(DEFAULT_RUNS,
                                                       "*.json")))
    if not paths:
        print("error: no stored runs in %s" % DEFAULT_RUNS, file=sys.stderr)
        return 2

    results = []
    try:
        for path in paths:
            run = load_run(path)
            pred = [predict(cleave, run, row) for row in run["rows"]]
            meas = [row["measured_ms"] for row in run["rows"]]
            s = summarize(pred, meas)
            s["run"] = os.path.basename(path)
            s["plans"] = len(pred)
            s["predicted_ms"] = pred
            s["rows"] = run["rows"]
            results.append(s)
            if args.plans:
                print("%s (%d launches)" % (s["run"], run.get("launches", 0)))
                order = sorted(range(len(pred)), key=lambda i: meas[i])
                for i in order:
                    print("  %-34s predicted %8.1f  measured %8.1f  %+6.1f%%"
                          % (run["rows"][i]["plan"], pred[i], meas[i],
                             (pred[i] / meas[i] - 1) * 100))
    except ReplayError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2

    print("%-30s %6s %8s %12s %12s %10s" % (
        "run", "plans", "tau-b", "median |err|", "median err", "max |err|"))
    for s in results:
        print("%-30s %6d %8.3f %11.1f%% %+11.1f%% %9.1f%%" % (
            s["run"], s["plans"], s["tau"], s["median_abs_error_pct"],
            s["median_signed_error_pct"], s["max_abs_error_pct"]))
    taus = [s["tau"] for s in results]
    met = sum(1 for s in results
              if s["tau"] >= AIM_TAU and s["median_abs_error_pct"] <= AIM_MEDIAN)
    mean_tau = statistics.fmean(taus)
    print("runs: %d   mean tau-b %.3f   smallest %.3f   mean median |error| "
          "%.1f%%" % (len(results), mean_tau, min(taus), statistics.fmean(
              s["median_abs_error_pct"] for s in results)))
    print("aim (median |error| <= %g%%, tau >= %g) met in %d of %d runs" %
          (AIM_MEDIAN, AIM_TAU, met, len(results)))
    if args.biases:
        try:
            print_biases(results)
        except ValueError as e:
            print("error: --biases: %s" % e, file=sys.stderr)
            return 2
    for s in results:
        del s["rows"]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.min_mean_tau is not None and mean_tau < args.min_mean_tau:
        print("error: mean tau-b %.3f is below --min-mean-tau %g" %
              (mean_tau, args.min_mean_tau), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

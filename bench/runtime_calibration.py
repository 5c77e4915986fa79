#!/usr/bin/env python3
"""Calibrate the cost model's predicted step time against `cleave run`.

Profiles this machine (`cleave profile --backend cpu`), then for a set of
distinct plans of one small GPT on N local CPU ranks -- by default 24 drawn
evenly over the search's ranked list of every valid plan (--plans sampled),
or a hand-picked table near the best ones (--plans picked):

  cleave compile MODEL --cluster cpu-local,devices=N --profile PROF --fix ... -o plan
  cleave inspect plan --json          -> predicted.step_time_s
  cleave run plan --steps K           -> median measured step time (after warm-up)

and prints predicted against measured time per plan, the median and largest
|error|, and the Kendall rank correlation (tau-b) between the two. The
launches go round-robin over the plans (every plan once, then again), so
that the machine's drift during the run falls on all plans alike. By default
(--measure interleaved) one launch runs a group of plans one step of each in
turn (`cleave run PLAN --interleave PLAN2 ...`): the machine's drift over
seconds then falls on the group alike too, and the measured time of a plan
is fitted with that drift taken out (block_effects.py: log step time = plan
+ turn of a launch, by median polish); the plain median of the launches'
medians is printed beside it, and the split-half tau of both says how
reproducible each is.

Python 3 standard library only.

    python3 bench/runtime_calibration.py                # full profile, 24 sampled plans
    python3 bench/runtime_calibration.py --plans picked # the hand-picked 24
    python3 bench/runtime_calibration.py --quick-profile --steps 6
    python3 bench/runtime_calibration.py --profile prof.txt   # reuse a profile
    python3 bench/runtime_calibration.py --json out.json
    python3 bench/runtime_calibration.py --measure separate   # a launch a plan
    python3 bench/runtime_calibration.py --record bench/data/calibration
        # also store the run for bench/calibration_replay.py

The ranks' OpenBLAS threads are set with --blas-threads (default 1, one
thread a rank, as runtime/kernels/README.md recommends); the profile is
measured with the same setting. Run on an otherwise idle machine.
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

from block_effects import plan_times, split_half
from machine_load import LoadMeter, wait_idle
from benchlib import DEFAULT_CLEAVE, ROOT

DEFAULT_MODEL = "zoo:gpt,layers=4,hidden=512,heads=8,seq=128,vocab=1024"

# (name, --fix knobs) for 4 ranks and a global batch of 8.
PLANS_4 = [
    ("dp4 mb1", "dp=4,microbatch=1"),
    ("dp4 mb2", "dp=4,microbatch=2"),
    ("tp4 mb2", "tp=4,microbatch=2"),
    ("tp4 mb8", "tp=4,microbatch=8"),
    ("pp4 1f1b mb1", "pp=4,microbatch=1,schedule=1f1b"),
    ("pp4 1f1b mb2", "pp=4,microbatch=2,schedule=1f1b"),
    ("pp4 1f1b mb4", "pp=4,microbatch=4,schedule=1f1b"),
    ("pp4 1f1b mb8", "pp=4,microbatch=8,schedule=1f1b"),
    ("pp4 gpipe mb1", "pp=4,microbatch=1,schedule=gpipe"),
    ("pp4 gpipe mb2", "pp=4,microbatch=2,schedule=gpipe"),
    ("tp2 pp2 mb1", "tp=2,pp=2,microbatch=1,schedule=1f1b"),
    ("tp2 pp2 mb4", "tp=2,pp=2,microbatch=4,schedule=1f1b"),
    ("dp2 tp2 mb2", "dp=2,tp=2,microbatch=2"),
    ("dp2 tp2 mb4", "dp=2,tp=2,microbatch=4"),
    ("dp2 pp2 mb1", "dp=2,pp=2,microbatch=1,schedule=1f1b"),
    ("dp2 pp2 mb2", "dp=2,pp=2,microbatch=2,schedule=1f1b"),
    ("dp2 pp2 mb4", "dp=2,pp=2,microbatch=4,schedule=1f1b"),
    # The interleaved and zero-bubble schedules, which the search may pick
    # for a plan to run.
    ("dp2 pp2 vpp2 mb1", "dp=2,pp=2,microbatch=1,schedule=interleaved,vpp=2"),
    ("pp4 zb-h1 mb1", "pp=4,microbatch=1,schedule=zb-h1"),
    ("dp2 pp2 zb-h1 mb2", "dp=2,pp=2,microbatch=2,schedule=zb-h1"),
    # Recomputation and ZeRO-3 cost time the cost model prices too.
    ("dp4 mb2 recomp", "dp=4,microbatch=2,recompute=full"),
    ("dp4 mb2 zero3", "dp=4,microbatch=2,zero=3"),
    ("tp4 mb2 recomp", "tp=4,microbatch=2,recompute=full"),
    ("pp4 mb2 recomp", "pp=4,microbatch=2,schedule=1f1b,recompute=full"),
]



def plan_name(plan):
    """A short name for a plan of the search's list: its degrees, microbatch
    size, schedule and the knobs that differ from the defaults."""
    parts = ["%s%d" % (k, plan[k]) for k in ("dp", "tp", "pp", "cp", "ep")
             if plan[k] > 1]
    parts.append("mb%d" % plan["microbatch_size"])
    if plan["pp"] > 1:
        parts.append(plan["schedule"] + ("%d" % plan["vpp"]
                                         if plan["vpp"] > 1 else ""))
    if plan["sp"]:
        parts.append("sp")
    if plan["zero"]:
        parts.append("z%d" % plan["zero"])
    if plan["recompute"] != "none":
        parts.append(plan["recompute"][:3])
    return " ".join(parts)


def plan_knobs(plan):
    """--fix knobs that pin every choice of a plan of the search's list."""
    return ",".join([
        "dp=%d" % plan["dp"], "tp=%d" % plan["tp"], "pp=%d" % plan["pp"],
        "cp=%d" % plan["cp"], "ep=%d" % plan["ep"],
        "sp=%s" % ("on" if plan["sp"] else "off"), "zero=%d" % plan["zero"],
        "microbatch=%d" % plan["microbatch_size"],
        "schedule=%s" % plan["schedule"], "vpp=%d" % plan["vpp"],
        "recompute=%s" % "/".join(plan["stage_recompute"])])


def sampled_plans(args, cluster, prof, env, work):
    """`count` plans spread evenly over the search's whole ranked list of
    valid plans (cleave compile --exhaustive): the fastest, the slowest and
    evenly spaced ranks between. The picked table clusters near the best
    plans, where neighbours differ by less than this machine's noise; this
    set weighs the plans as the search meets them, so tau says how well
    the cost model orders the space the search actually ranks."""
    out = run([args.cleave, "compile", args.model, "--cluster", cluster,
               "--global-batch", str(args.global_batch),
               "--optimizer", args.optimizer, "--profile", prof,
               "--exhaustive", "--top-k", "100000", "--json",
               "-o", os.path.join(work, "best.cleave")], env=env)
    ranked = json.loads(out)["top_k"]
    count = min(args.sample, len(ranked))
    picks = sorted({round(i * (len(ranked) - 1) / max(1, count - 1))
                    for i in range(count)})
    plans = []
    for i in picks:
        plan = ranked[i]["plan"]
        plans.append((plan_name(plan), plan_knobs(plan),
                      ranked[i]["predicted"]["step_time_s"]))
    print("sampled %d of the search's %d plans (ranks %s)" % (
        len(plans), len(ranked), ",".join(str(i + 1) for i in picks)),
        flush=True)
    return plans


STEP_RE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)\s+time\s+([0-9.]+)\s*ms")
TURN_RE = re.compile(
    r"^plan\s+(\d+)\s+step\s+(\d+)\s+loss\s+(\S+)\s+time\s+([0-9.]+)\s*ms")


def run(cmd, env=None, timeout=None):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def kendall_tau_b(xs, ys):
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0-n1)(n0-n2))."""
    n = len(xs)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = xs[i] - xs[j]
            dy = ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + tx) * (conc + disc + ty)) ** 0.5
    return (conc - disc) / denom if denom else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--ranks", type=int, default=4,
                    help="devices of the cpu-local cluster (plans are for 4)")
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2,
                    help="first steps left out of the median")
    ap.add_argument("--profile", help="reuse this profile instead of measuring")
    ap.add_argument("--quick-profile", action="store_true",
                    help="cleave profile --quick")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="OPENBLAS_NUM_THREADS / OMP_NUM_THREADS of every rank")
    ap.add_argument("--wait-idle", type=float, default=120,
                    help="seconds to wait for an idle machine before each "
                         "measurement")
    ap.add_argument("--max-load", type=float, default=0.2,
                    help="rerun a plan while other processes used more "
                         "cores than this during its run")
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--launches", type=int, default=5,
                    help="separate launches of each plan; the measured time "
                    "is the median of their medians (where the scheduler "
                    "puts 4 ranks on 2 cores changes a step by 10-30%% "
                    "from one launch to the next)")
    ap.add_argument("--measure", choices=("interleaved", "separate"),
                    default="interleaved",
                    help="interleaved: each launch runs a group of plans, "
                    "one step of each in turn (cleave run --interleave), so "
                    "that the machine's drift over seconds falls on the "
                    "group alike; separate: one launch a plan")
    ap.add_argument("--group", type=int, default=12,
                    help="plans a launch interleaves (each rank holds "
                    "every plan's arena: ~0.5 GB a plan here); the groups "
                    "are drawn anew for every launch")
    ap.add_argument("--plans", choices=("sampled", "picked"),
                    default="sampled",
                    help="sampled: --sample plans spread evenly over the "
                    "search's ranked list of every valid plan; picked: the "
                    "hand-picked table of plans near the best")
    ap.add_argument("--sample", type=int, default=24,
                    help="plans to draw for --plans sampled")
    ap.add_argument("--only", help="comma-separated plan names to run")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--keep", help="directory to keep the plans in")
    ap.add_argument("--record", metavar="DIR",
                    help="also store the run in DIR as calibration_replay.py "
                    "reads it (RUN.json and RUN.profile, named by the time), "
                    "e.g. bench/data/calibration")
    args = ap.parse_args()

    if args.ranks != 4:
        sys.exit("the plan table is written for 4 ranks")
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    env["OMP_NUM_THREADS"] = str(args.blas_threads)

    work = args.keep or tempfile.mkdtemp(prefix="cleave-calib-")
    os.makedirs(work, exist_ok=True)

    prof = args.profile
    if not prof:
        prof = os.path.join(work, "profile.txt")
        cmd = [args.cleave, "profile", "--backend", "cpu", "-o", prof,
               "--ranks", str(args.ranks)]
        if args.quick_profile:
            cmd.append("--quick")
        worker = os.path.join(os.path.dirname(args.cleave),
                              "cleave-profile-mpi")
        if os.access(worker, os.X_OK):
            cmd += ["--mpi-worker", worker]
        wait_idle(args.wait_idle)
        t0 = time.time()
        print("profiling: %s" % " ".join(cmd), flush=True)
        run(cmd, env=env, timeout=900)
        print("profile written in %.1f s" % (time.time() - t0), flush=True)

    cluster = "cpu-local,devices=%d" % args.ranks
    if args.plans == "sampled":
        plans = sampled_plans(args, cluster, prof, env, work)
    else:
        plans = [(name, fix, None) for name, fix in PLANS_4]
    if args.only:
        keep = set(s.strip() for s in args.only.split(","))
        plans = [p for p in plans if p[0] in keep]

    compiled = []
    for name, fix, listed in plans:
        path = os.path.join(work, re.sub(r"\W+", "_", name) + ".cleave")
        run([args.cleave, "compile", args.model, "--cluster", cluster,
             "--global-batch", str(args.global_batch), "--fix", fix,
             "--optimizer", args.optimizer, "--profile", prof, "-o", path],
            env=env)
        info = json.loads(run([args.cleave, "inspect", path, "--json"], env=env))
        predicted = info["predicted"]["step_time_s"]
        # The knobs must pin the plan the search listed, or the sample is
        # not the one it claims to be.
        if listed is not None and abs(predicted - listed) > 1e-3 * listed:
            raise RuntimeError("%s: --fix %s compiles to %.4f s, the search "
                               "listed %.4f s" % (name, fix, predicted,
                                                  listed))
        compiled.append((name, path, info))

    def launch_once(path):
        # Other processes' load spoils a measurement on 2 cores: rerun it
        # (up to --retries times) while others used more than --max-load
        # cores, and keep the least disturbed run.
        best = None
        for attempt in range(args.retries + 1):
            wait_idle(args.wait_idle)
            with LoadMeter() as load:
                out = run([args.cleave, "run", path, "--steps",
                           str(args.steps)], env=env, timeout=1800)
            times = [float(m.group(3)) for m in
                     (STEP_RE.match(l.strip()) for l in out.splitlines())
                     if m]
            if len(times) != args.steps:
                raise RuntimeError("expected %d step lines from cleave "
                                   "run:\n%s" % (args.steps, out))
            if best is None or load.other_cores < best[1].other_cores:
                best = (times, load)
            if load.other_cores <= args.max_load:
                break
        return best

    def launch_group(paths):
        # As launch_once, for plans run in turn in one launch: step times
        # per plan, in the order of `paths`.
        if len(paths) == 1:
            return [launch_once(paths[0])]
        best = None
        cmd = [args.cleave, "run", paths[0], "--steps", str(args.steps)]
        for other in paths[1:]:
            cmd += ["--interleave", other]
        for attempt in range(args.retries + 1):
            wait_idle(args.wait_idle)
            with LoadMeter() as load:
                out = run(cmd, env=env, timeout=3600)
            times = [[] for _ in paths]
            for line in out.splitlines():
                m = TURN_RE.match(line.strip())
                if m:
                    times[int(m.group(1))].append(float(m.group(4)))
            if any(len(t) != args.steps for t in times):
                raise RuntimeError("expected %d step lines a plan from "
                                   "cleave run --interleave:\n%s" %
                                   (args.steps, out))
            if best is None or load.other_cores < best[1].other_cores:
                best = (times, load)
            if load.other_cores <= args.max_load:
                break
        return [(t, best[1]) for t in best[0]]

    # Launches round-robin over the plans: the machine's drift over the
    # run (minutes) then falls on every plan alike instead of on the plans
    # measured while it lasted. Interleaved, each launch also spreads the
    # drift over seconds evenly over its group.
    launches = {name: [] for name, _, _ in compiled}
    # Interleaved: every step after the warm-up as (plan, block, ms), a
    # block being one turn of one launch (block_effects.py), per round.
    blocked = [] if args.measure == "interleaved" and \
        min(args.group, len(compiled)) > 1 else None
    for launch in range(args.launches):
        if args.measure == "separate":
            for name, path, _ in compiled:
                launches[name].append(launch_once(path))
        else:
            order = list(range(len(compiled)))
            random.Random(launch).shuffle(order)
            steps = []
            for start in range(0, len(order), args.group):
                group = [compiled[i] for i in order[start:start + args.group]]
                results = launch_group([path for _, path, _ in group])
                for (name, _, _), result in zip(group, results):
                    launches[name].append(result)
                    for turn, ms in enumerate(result[0]):
                        if turn >= args.warmup:
                            steps.append((name, (launch, start, turn), ms))
            if blocked is not None:
                blocked.append(steps)
        print("launch %d of %d measured" % (launch + 1, args.launches),
              flush=True)

    # The measured time: with blocks, each plan's time at the run's median
    # speed of the machine (block_effects.py: the drift between launches
    # and turns taken out); else the median of the launches' medians.
    def raw_times(steps):
        per = {}
        for name, (launch, _, _), ms in steps:
            per.setdefault(name, {}).setdefault(launch, []).append(ms)
        return {name: statistics.median(statistics.median(v)
                                        for v in by_launch.values())
                for name, by_launch in per.items()}
    fitted = None
    if blocked:
        try:
            fitted = plan_times([s for l in blocked for s in l])
        except ValueError as e:
            # One launch of disjoint groups: nothing joins the groups.
            print("measured: the median of medians (%s)" % e)

    rows = []
    for name, path, info in compiled:
        predicted = info["predicted"]["step_time_s"] * 1e3
        medians = [statistics.median(t[args.warmup:])
                   for t, _ in launches[name]]
        raw = statistics.median(medians)
        measured = fitted[name] if fitted else raw
        times = [t for t, _ in launches[name]]
        load = max((l for _, l in launches[name]),
                   key=lambda l: l.other_cores)
        spread = (max(medians) - min(medians)) / raw * 100
        err = (predicted - measured) / measured * 100
        rows.append(dict(plan=name, knobs=info["knobs"]["text"],
                         predicted_ms=predicted, measured_ms=measured,
                         raw_measured_ms=raw,
                         error_pct=err, step_times_ms=times,
                         launch_medians_ms=medians, spread_pct=spread,
                         other_load_cores=load.other_cores,
                         bubble=info["predicted"].get("bubble_fraction")))
        print("  %-30s predicted %9.1f ms  measured %9.1f ms  (%+.1f%%)"
              "  launches %s  other load %.2f cores" % (
                  name, predicted, measured, err,
                  "/".join("%.0f" % m for m in medians), load.other_cores),
              flush=True)

    print()
    print("model %s, %d ranks (cpu-local), global batch %d, %s, "
          "OPENBLAS_NUM_THREADS=%d, %d launches a plan (round-robin over "
          "the plans), steps %d-%d of each" % (
              args.model, args.ranks, args.global_batch, args.optimizer,
              args.blas_threads, args.launches, args.warmup + 1, args.steps))
    if args.measure == "interleaved":
        print("interleaved: groups of %d plans a launch, one step of each "
              "in turn (cleave run --interleave), groups drawn anew each "
              "launch" % min(args.group, len(compiled)))
    if fitted:
        print("measured: each plan's step time with every turn's speed of "
              "the machine taken out (median polish of log step time = "
              "plan + turn, bench/block_effects.py); raw: the median of "
              "the launches' medians")
    else:
        print("measured: the median of the launches' medians")
    print("%-30s %13s %12s %9s %10s %9s %9s %11s" % (
        "plan", "predicted ms", "measured ms", "error %", "meas/pred",
        "raw ms", "spread %", "other load"))
    print("-" * 110)
    for r in rows:
        print("%-30s %13.1f %12.1f %+9.1f %10.2f %9.1f %9.1f %11.2f" % (
            r["plan"], r["predicted_ms"], r["measured_ms"], r["error_pct"],
            r["measured_ms"] / r["predicted_ms"], r["raw_measured_ms"],
            r["spread_pct"], r["other_load_cores"]))
    print("-" * 110)
    print("spread: (largest - smallest launch median) / raw")
    cores = os.cpu_count()
    print("other load: CPU cores used by other processes during the run "
          "(this machine has %d)" % cores)
    abs_err = [abs(r["error_pct"]) for r in rows]
    tau = kendall_tau_b([r["predicted_ms"] for r in rows],
                        [r["measured_ms"] for r in rows])
    signed = statistics.median(r["error_pct"] for r in rows)
    print("plans: %d" % len(rows))
    print("median |error|: %.1f%%   (median signed error %+.1f%%)" %
          (statistics.median(abs_err), signed))
    print("max |error|:    %.1f%%   (%s)" % (
        max(abs_err), rows[abs_err.index(max(abs_err))]["plan"]))
    print("Kendall tau-b:  %.3f" % tau)
    if fitted:
        raw_errors = [abs(r["predicted_ms"] / r["raw_measured_ms"] - 1) * 100
                      for r in rows]
        print("  against the raw medians: tau-b %.3f, median |error| %.1f%%"
              % (kendall_tau_b([r["predicted_ms"] for r in rows],
                               [r["raw_measured_ms"] for r in rows]),
                 statistics.median(raw_errors)))
    # Where the model calls two plans nearly equal, this machine's noise
    # orders them at random: tau over the pairs it separates by more.
    for apart in (0.05, 0.10, 0.20):
        conc = disc = 0
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                p, q = rows[i]["predicted_ms"], rows[j]["predicted_ms"]
                if abs(p - q) < apart * min(p, q):
                    continue
                sign = (p - q) * (rows[i]["measured_ms"] -
                                  rows[j]["measured_ms"])
                conc += sign > 0
                disc += sign < 0
        if conc + disc:
            print("  over the %d pairs predicted %d%%+ apart: %.3f" % (
                conc + disc, apart * 100, (conc - disc) / (conc + disc)))
    if args.launches >= 2:
        # How well one launch ranks the plans against another: the ceiling
        # the machine's noise puts on any model's tau.
        first = [r["launch_medians_ms"][0] for r in rows]
        second = [r["launch_medians_ms"][1] for r in rows]
        print("noise ceiling:  tau-b %.3f between the first two launches" %
              kendall_tau_b(first, second))
    if blocked and len(blocked) >= 2:
        # How reproducible each estimator is, with no cost model involved:
        # tau between the times from one half of the launches and from the
        # other, over every split into halves.
        fit_half = split_half(blocked, plan_times, kendall_tau_b)
        raw_half = split_half(blocked, raw_times, kendall_tau_b)
        print("split-half tau: %s measured, %s raw (times from half of "
              "the launches against the other half, mean over the splits)"
              % tuple("n/a" if t is None else "%.3f" % t
                      for t in (fit_half if fitted else raw_half, raw_half)))
    ok = statistics.median(abs_err) <= 15 and tau >= 0.8
    print("aim (median |error| <= 15%%, tau >= 0.8): %s" %
          ("met" if ok else "NOT met"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(model=args.model, ranks=args.ranks,
                           global_batch=args.global_batch, profile=prof,
                           rows=rows, median_abs_error_pct=statistics.median(abs_err),
                           max_abs_error_pct=max(abs_err), kendall_tau_b=tau,
                           measure=args.measure, group=args.group,
                           estimator="block-effects" if fitted else
                           "median-of-medians", blocked_steps=blocked),
                      f, indent=2)
    if args.record:
        record_run(args, prof, rows, fitted)


def record_run(args, prof, rows, fitted):
    """Stores the run for bench/calibration_replay.py: what a prediction
    needs (model, cluster, batch, optimizer, the profile, each plan's
    knobs) and each plan's measured time."""
    os.makedirs(args.record, exist_ok=True)
    layers = re.search(r"layers=(\d+)", args.model)
    name = "gpt%s-cpu%d-%s" % (layers.group(1) if layers else "",
                               args.ranks,
                               time.strftime("%Y%m%d-%H%M", time.gmtime()))
    with open(prof) as f:
        profile_text = f.read()
    with open(os.path.join(args.record, name + ".profile"), "w") as f:
        f.write(profile_text)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True)
    run_record = dict(
        model=args.model, ranks=args.ranks,
        cluster="cpu-local,devices=%d" % args.ranks,
        global_batch=args.global_batch, optimizer=args.optimizer,
        profile=name + ".profile", launches=args.launches,
        measure=args.measure, group=args.group,
        estimator="block-effects" if fitted else "median-of-medians",
        rows=[dict(plan=r["plan"], knobs=r["knobs"],
                   measured_ms=round(r["measured_ms"], 2),
                   predicted_ms_then=round(r["predicted_ms"], 2),
                   launch_medians_ms=r["launch_medians_ms"]) for r in rows])
    if commit.returncode == 0:
        run_record["predicted_by"] = commit.stdout.strip()
    with open(os.path.join(args.record, name + ".json"), "w") as f:
        json.dump(run_record, f, indent=1)
    print("recorded as %s" % os.path.join(args.record, name + ".json"))


if __name__ == "__main__":
    main()

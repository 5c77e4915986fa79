#!/usr/bin/env python3
"""Plan step times from interleaved launches, with the machine's drift
taken out.

bench/runtime_calibration.py times plans in launches of a group each
(`cleave run --interleave`): in every turn of a launch each plan of the
group runs one step, one after the other, within seconds. On a shared
2-core machine the speed of the machine itself moves by 10-30% between
launches and by a few percent between turns, and that drift falls on every
plan of a turn alike. So a step time is modelled as

    log t = plan effect + block effect + noise,    block = one turn of a launch

(a two-way layout without interaction, as blocked experiments are read),
and fitted with Tukey's median polish: alternately subtract each plan's and
each block's median residual until nothing moves. Medians, not means, so
that one disturbed step does not move a plan. The block effects are then
centred on their median, so a plan's time is its time at the run's median
speed of the machine (as the plain median of medians is a median too).

The plain median of each launch's median keeps the drift between launches:
a plan whose groups happened to land on slow launches comes out slow. The
test of an estimator that needs no cost model is split-half reliability:
the rank correlation between the plan times estimated from one half of the
launches and from the other half.

Python 3 standard library only. `python3 bench/block_effects.py --self-test`
checks the fit on synthetic launches (test/Tools/bench-block-effects.test).
"""

import itertools
import math
import random
import statistics
import sys


def median_polish(observations, iterations=100, tolerance=1e-12):
    """observations: (plan, block, log time) triples. Returns {plan: plan
    effect} with the block effects centred on their median (so exp(effect)
    is the plan's time at the median block), and {block: block effect}.

    Every block must hold at least two plans, and the plans must be
    connected through shared blocks (groups drawn anew each launch are);
    otherwise a block's effect would absorb its only plan's time."""
    plans = sorted({p for p, _, _ in observations})
    blocks = sorted({b for _, b, _ in observations})
    per_block = {b: set() for b in blocks}
    for p, b, _ in observations:
        per_block[b].add(p)
    lonely = [b for b in blocks if len(per_block[b]) < 2]
    if lonely:
        raise ValueError("block %r holds one plan: its effect cannot be "
                         "told from the plan's" % (lonely[0],))
    if not _connected(plans, per_block):
        raise ValueError("the plans fall into groups that share no block: "
                         "their times cannot be compared")
    plan_effect = {p: 0.0 for p in plans}
    block_effect = {b: 0.0 for b in blocks}
    by_plan = {p: [] for p in plans}
    by_block = {b: [] for b in blocks}
    for p, b, y in observations:
        by_plan[p].append((b, y))
        by_block[b].append((p, y))
    for _ in range(iterations):
        moved = 0.0
        for p in plans:
            r = statistics.median(y - plan_effect[p] - block_effect[b]
                                  for b, y in by_plan[p])
            plan_effect[p] += r
            moved = max(moved, abs(r))
        for b in blocks:
            r = statistics.median(y - plan_effect[p] - block_effect[b]
                                  for p, y in by_block[b])
            block_effect[b] += r
            moved = max(moved, abs(r))
        if moved < tolerance:
            break
    centre = statistics.median(block_effect.values())
    return ({p: e + centre for p, e in plan_effect.items()},
            {b: e - centre for b, e in block_effect.items()})


def _connected(plans, per_block):
    seen, frontier = set(), [plans[0]] if plans else []
    blocks_of = {}
    for b, ps in per_block.items():
        for p in ps:
            blocks_of.setdefault(p, []).append(b)
    while frontier:
        p = frontier.pop()
        if p in seen:
            continue
        seen.add(p)
        for b in blocks_of.get(p, []):
            frontier.extend(q for q in per_block[b] if q not in seen)
    return len(seen) == len(plans)


def plan_times(steps):
    """steps: (plan, block, seconds or ms) triples. Returns {plan: time} in
    the unit given, the block effects taken out."""
    effects, _ = median_polish([(p, b, math.log(t)) for p, b, t in steps])
    return {p: math.exp(e) for p, e in effects.items()}


def split_half(launches, estimate, correlation):
    """Split-half reliability: `launches` is a list of launches, each a list
    of step triples; `estimate` maps a list of steps to {plan: time}. For
    every way to take half the launches (odd counts leave the last out of
    the other half), the correlation between the estimates from the two
    halves; returns their mean, or None with fewer than two launches or
    where no half can be estimated (`estimate` raising ValueError: one
    launch of two disjoint groups has no block joining them)."""
    n = len(launches)
    if n < 2:
        return None
    values = []
    half = n // 2
    for first in itertools.combinations(range(n), half):
        second = [i for i in range(n) if i not in first][:half]
        try:
            a = estimate([s for i in first for s in launches[i]])
            b = estimate([s for i in second for s in launches[i]])
        except ValueError:
            continue
        plans = sorted(set(a) & set(b))
        values.append(correlation([a[p] for p in plans],
                                  [b[p] for p in plans]))
    return statistics.fmean(values) if values else None


def _synthetic(rng, plans=24, launches=5, group=12, turns=6):
    """Launches as runtime_calibration.py draws them, on a machine whose
    speed moves by ~15% between launches and ~3% between turns, with 2%
    noise a step and one step in twenty disturbed by +40%."""
    truth = [400.0 * (1 + 0.02 * i) for i in range(plans)]
    out = []
    for launch in range(launches):
        order = list(range(plans))
        random.Random(launch).shuffle(order)
        steps = []
        for g, start in enumerate(range(0, plans, group)):
            speed = math.exp(rng.gauss(0, 0.15))
            for turn in range(turns):
                turn_speed = speed * math.exp(rng.gauss(0, 0.03))
                for p in order[start:start + group]:
                    t = truth[p] * turn_speed * math.exp(rng.gauss(0, 0.02))
                    if rng.random() < 0.05:
                        t *= 1.4
                    steps.append((p, (launch, g, turn), t))
        out.append(steps)
    return truth, out


def _raw_times(steps):
    """The median over launches of each launch's median step (the
    estimator without block effects)."""
    per = {}
    for p, (launch, _, _), t in steps:
        per.setdefault(p, {}).setdefault(launch, []).append(t)
    return {p: statistics.median(statistics.median(v) for v in ls.values())
            for p, ls in per.items()}


def _kendall_tau_a(xs, ys):
    conc = disc = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            conc += s > 0
            disc += s < 0
    return (conc - disc) / (conc + disc)


def self_test():
    rng = random.Random(7)
    worst_fit = worst_raw = 0.0
    rel_fit, rel_raw = [], []
    for trial in range(5):
        truth, launches = _synthetic(rng)
        steps = [s for l in launches for s in l]
        fit, raw = plan_times(steps), _raw_times(steps)
        # Only ratios between plans are identified: compare after scaling
        # both to the truth's geometric mean.
        for est, name in ((fit, "fit"), (raw, "raw")):
            scale = math.exp(statistics.fmean(
                math.log(truth[p] / est[p]) for p in est))
            err = max(abs(est[p] * scale / truth[p] - 1) for p in est)
            if name == "fit":
                worst_fit = max(worst_fit, err)
            else:
                worst_raw = max(worst_raw, err)
        rel_fit.append(split_half(launches, plan_times, _kendall_tau_a))
        rel_raw.append(split_half(launches, _raw_times, _kendall_tau_a))
    print("largest error of a plan's time: block effects %.1f%%, raw "
          "medians %.1f%%" % (100 * worst_fit, 100 * worst_raw))
    print("split-half tau: block effects %.3f, raw medians %.3f" % (
        statistics.fmean(rel_fit), statistics.fmean(rel_raw)))
    ok = worst_fit < 0.03 and worst_raw > 2 * worst_fit and \
        statistics.fmean(rel_fit) > statistics.fmean(rel_raw)
    # A block with one plan, or plans that share no block, cannot be fitted.
    for bad in ([(0, "a", 0.0), (1, "a", 0.1), (2, "b", 0.2)],
                [(0, "a", 0.0), (1, "a", 0.1), (2, "b", 0.2), (3, "b", 0.3)]):
        try:
            median_polish(bad)
            ok = False
            print("no error for %r" % (bad,))
        except ValueError as e:
            print("error: %s" % e)
    print("self-test %s" % ("passed" if ok else "FAILED"))
    return ok


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(0 if self_test() else 1)
    sys.exit("usage: block_effects.py --self-test (the module is imported "
             "by runtime_calibration.py)")

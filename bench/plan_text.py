"""How the benchmarks print a plan's recomputation (Python 3 stdlib only)."""


def recompute_text(plan):
    """`plan["recompute"]`, or where the stages differ (`compile --json`'s
    `stage_recompute`) the runs of equal stages folded: "selectivex4/nonex3"."""
    runs = []
    for mode in plan.get("stage_recompute", []):
        if runs and runs[-1][0] == mode:
            runs[-1][1] += 1
        else:
            runs.append([mode, 1])
    if len(runs) > 1:
        return "/".join(f"{m}x{n}" for m, n in runs)
    return plan["recompute"]

"""What the benchmarks share (Python 3 stdlib only): where the cleave
binary is, `cleave compile --json`, and how a plan's recomputation prints."""
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CLEAVE = os.path.join(ROOT, "build", "tools", "cleave", "cleave")


def compile_json(cleave, model, cluster, batch, fix=None, extra=()):
    """`cleave compile MODEL --cluster C --global-batch B [--fix F] --json`:
    (the JSON or None, wall seconds, the error's last line or "")."""
    models = [model] if isinstance(model, str) else list(model)
    cmd = [cleave, "compile", *models, "--cluster", cluster,
           "--global-batch", str(batch), "--json", *extra]
    if fix:
        cmd += ["--fix", fix]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return None, wall, lines[-1] if lines else "exit %d" % out.returncode
    return json.loads(out.stdout), wall, ""


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

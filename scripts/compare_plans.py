#!/usr/bin/env python3
"""Plans and predictions unchanged by a refactoring: runs `cleave compile
--json` with two cleave binaries over the zoo presets and the test models
and compares everything but the search's own statistics (its time and
how many plans it scored).

A change meant to keep every plan (a faster search, a moved module) is
checked with the binary before it and the one after:

  scripts/compare_plans.py OLD/cleave NEW/cleave [--quick]

Prints one line per case and exits 1 when any plan or figure differs.
A change meant to move predictions (one scoring path replacing another)
is measured with --delta: each differing case also prints the predicted
step time and peak memory, old and new, and whether the plan changed.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "test", "models")

# (model arguments, cluster, global batch, extra flags)
CASES = [
    (["zoo:gpt3-175b"], "dgx-a100-80g,nodes=128", 1536, []),
    (["zoo:gpt3-1.3b"], "dgx-a100-80g", 64, ["--exhaustive"]),
    (["zoo:llama3-405b"], "dgx-h100,nodes=128", 1024, ["--fix", "pp=16"]),
    (["zoo:llama3-405b"], "dgx-h100,nodes=2048", 2048, []),
    (["zoo:gpt,layers=126,hidden=4096,heads=32"], "dgx-a100-80g,nodes=16",
     512, ["--fix", "schedule=interleaved"]),
    (["zoo:mixtral-8x7b"], "dgx-h100,nodes=8", 512, []),
    (["zoo:llama2-7b"], "dgx-a100-40g,nodes=2", 256, []),
    (["zoo:bert-large"], "dgx-a100-40g", 256, []),
    (["zoo:vit-h14"], "dgx-a100-80g,nodes=2", 1024, []),
    (["zoo:gpt,layers=5,hidden=32,heads=4,seq=8,vocab=64"],
     "cpu-local,devices=4", 8, ["--fix", "pp=2,schedule=interleaved"]),
    # Graphs without transformer layers on GPU clusters (collectives beside
    # compute, 16-bit storage): the graph planner's rules where they differ
    # most from CPU ranks.
    (["zoo:wrn-50-2"], "dgx-a100-80g,nodes=2", 64, []),
    (["zoo:wrn-50-2"], "dgx-a100-40g,nodes=4,devices=1", 256, []),
    (["zoo:wideresnet,depth=50,width=1,image=128,classes=10"],
     "dgx-a100-80g,nodes=4", 512, ["--fix", "pp=2"]),
]
QUICK = 5


def test_model_cases():
    """The ONNX test models, each on 4 local CPU devices."""
    if not os.path.isdir(MODELS):
        return []
    # Symbolic dimensions other than the batch, bound as models.json's
    # shapes name them.
    dims = {"seq": "--dim=seq=16"}
    cases = []
    with open(os.path.join(MODELS, "models.json")) as f:
        listed = json.load(f)["models"]
    for entry in listed:
        path = os.path.join(MODELS, entry["file"])
        if not os.path.exists(path):
            continue
        names = {d for i in entry.get("inputs", []) for d in i["shape"]
                 if isinstance(d, str)}
        cases.append(([path], "cpu-local,devices=4", 8,
                      [dims[n] for n in sorted(names) if n in dims]))
    return cases


def compile_json(cleave, model, cluster, batch, extra):
    cmd = [cleave, "compile", *model, "--cluster", cluster,
           "--global-batch", str(batch), "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {out.returncode}"}
    data = json.loads(out.stdout)
    # How the search got there (time, plans scored) may change; where it
    # got may not.
    data.pop("search", None)
    return data


def first_difference(a, b, path="", ignore=()):
    if path in ignore:
        return None
    if type(a) is not type(b):
        return f"{path}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if any(f"{path}/{k}".endswith(i) for i in ignore):
                continue
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'new' if k in b else 'old'}"
            d = first_difference(a[k], b[k], f"{path}/{k}", ignore)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]", ignore)
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--ignore", action="append", default=[],
                    metavar="/PATH",
                    help="JSON paths ending so are not compared (a key the "
                         "new binary adds, e.g. /plan/attention, wherever "
                         "it appears); repeatable")
    ap.add_argument("--delta", action="store_true",
                    help="print old and new step time and peak memory of "
                         "each differing case")
    ap.add_argument("--quick", action="store_true",
                    help=f"only the first {QUICK} zoo cases")
    args = ap.parse_args()
    cases = CASES[:QUICK] if args.quick else CASES + test_model_cases()
    differing = 0
    for model, cluster, batch, extra in cases:
        old = compile_json(args.old, model, cluster, batch, extra)
        new = compile_json(args.new, model, cluster, batch, extra)
        diff = first_difference(old, new, ignore=set(args.ignore))
        name = " ".join([os.path.basename(model[0]), cluster, *extra])
        knobs = old.get("plan", {})
        plan = old.get("error") or ",".join(
            f"{k}={knobs[k]}" for k in ("dp", "tp", "pp", "cp", "ep", "zero",
                                        "microbatch_size", "schedule", "vpp")
            if k in knobs)
        print(f"{'same' if not diff else 'DIFFERS':8} {name}: "
              f"{diff or plan}")
        differing += bool(diff)
        if diff and args.delta and "predicted" in old and "predicted" in new:
            po, pn = old["predicted"], new["predicted"]
            step = pn["step_time_s"] / po["step_time_s"] - 1
            mem = pn["peak_memory_bytes"] / po["peak_memory_bytes"] - 1
            same_plan = old.get("plan") == new.get("plan")
            print(f"         step {po['step_time_s'] * 1e3:.3f} -> "
                  f"{pn['step_time_s'] * 1e3:.3f} ms ({step:+.2%}), peak "
                  f"memory {mem:+.2%}, plan "
                  f"{'unchanged' if same_plan else 'changed'}")
    print(f"{len(cases) - differing} of {len(cases)} cases identical")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Stress the watchdog: stop one rank at a random moment, N times.

Each trial starts `cleave run` on a 4-rank plan (GPT, dp=2 x tp=2) that
saves a checkpoint every step (so a stop lands in a collective, a compute
instruction, a checkpoint write or between steps, wherever the clock
says), waits a random time, sends SIGSTOP to a random rank and measures
how long the job takes to end. A trial passes when:
  - `cleave run` exits non-zero within --timeout + SLACK seconds of the stop,
  - its output names the stopped rank ("rank R stopped responding"),
  - none of Open MPI's boilerplate reaches the user (it is in the log
    file the error names),
  - no worker process is left 5 s after the launcher ended.

    watchdog_stress.py [--trials N] [--timeout S] [--slack S] [--seed K]
                       [path/to/cleave]

Prints one line per trial and a summary table; exits 1 if any trial
failed.
"""
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import DEFAULT_CLEAVE

MODEL = "zoo:gpt,layers=4,hidden=128,heads=4,seq=128,vocab=1024"
BOILERPLATE = ("MPI_ABORT", "orte_base_help_aggregate", "mpirun noticed",
               "Primary job")


def workers(plan):
    """The rank processes of `plan` (not mpirun, whose command line names
    the worker too)."""
    out = subprocess.run(["pgrep", "-x", "cleave-worker"],
                         capture_output=True, text=True)
    pids = []
    for pid in out.stdout.split():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if plan.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def trial(cleave, folder, index, timeout, slack, rng):
    plan = os.path.join(folder, "p.cleave")
    save = os.path.join(folder, f"ck{index}")
    proc = subprocess.Popen(
        [cleave, "run", plan, "--steps", "100000", "--timeout", str(timeout),
         "--save", save, "--save-every", "1", "--keep", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Wait for the ranks, then a random moment of training.
    start = time.monotonic()
    ranks = []
    while len(ranks) < 4 and time.monotonic() - start < 60:
        time.sleep(0.1)
        ranks = workers(plan)
    time.sleep(rng.uniform(0.5, 4.0))
    ranks = workers(plan)
    if not ranks:
        proc.kill()
        return {"ok": False, "why": "no worker to stop", "seconds": 0}
    victim = rng.choice(ranks)
    try:
        with open(f"/proc/{victim}/environ", "rb") as f:
            env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        victim_rank = env.get(b"OMPI_COMM_WORLD_RANK", b"?").decode()
    except OSError:
        victim_rank = "?"
    stopped_at = time.monotonic()
    os.kill(victim, signal.SIGSTOP)
    try:
        output, _ = proc.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        os.kill(victim, signal.SIGKILL)
        return {"ok": False, "why": "still running 60 s after the timeout",
                "seconds": time.monotonic() - stopped_at}
    seconds = time.monotonic() - stopped_at
    time.sleep(5)
    left = workers(plan)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    named = re.search(r"rank (\d+) stopped responding (.*?): ", output)
    where = named.group(2) if named else ""
    problems = []
    if proc.returncode == 0:
        problems.append("exit 0")
    if seconds > timeout + slack:
        problems.append(f"ended {seconds:.1f} s after the stop")
    if not named:
        problems.append("no rank named as stopped")
    leaked = [b for b in BOILERPLATE if b in output]
    if leaked:
        problems.append("Open MPI boilerplate shown: " + ", ".join(leaked))
    if left:
        problems.append(f"{len(left)} worker(s) left 5 s later")
    kind = ("checkpoint" if "checkpoint" in where else
            "collective" if "comm." in where else
            "between instructions" if "between" in where else
            "compute" if where else "?")
    return {"ok": not problems, "why": "; ".join(problems),
            "seconds": seconds, "where": where, "kind": kind,
            "output": f"(stopped rank {victim_rank}, pid {victim})\n" + output}


def main():
    args = sys.argv[1:]
    opts = {"--trials": 100, "--timeout": 5.0, "--slack": 5.0, "--seed": 1}
    for key in list(opts):
        if key in args:
            i = args.index(key)
            opts[key] = type(opts[key])(args[i + 1])
            del args[i:i + 2]
    cleave = args[0] if args else DEFAULT_CLEAVE
    rng = random.Random(opts["--seed"])
    with tempfile.TemporaryDirectory(prefix="cleave-watchdog-") as folder:
        subprocess.run(
            [cleave, "compile", MODEL, "--cluster", "cpu-local,devices=4",
             "--global-batch", "16", "--fix", "dp=2,tp=2,microbatch=2",
             "-o", os.path.join(folder, "p.cleave")],
            check=True, capture_output=True)
        results = []
        for i in range(opts["--trials"]):
            r = trial(cleave, folder, i, opts["--timeout"], opts["--slack"],
                      rng)
            results.append(r)
            print(f"trial {i + 1:3d}: {'ok  ' if r['ok'] else 'FAIL'} "
                  f"{r['seconds']:5.1f} s  {r.get('kind', ''):21s} "
                  f"{r.get('where', '')[:70]} {r['why']}", flush=True)
            if not r["ok"]:
                # What the user read, to see why.
                for line in r.get("output", "").splitlines()[-12:]:
                    print(f"        | {line}", flush=True)
    times = sorted(r["seconds"] for r in results)
    passed = sum(r["ok"] for r in results)
    kinds = {}
    for r in results:
        kinds[r.get("kind", "?")] = kinds.get(r.get("kind", "?"), 0) + 1
    print()
    print(f"{'trials':>7} {'passed':>7} {'median s':>9} {'max s':>7} "
          f"{'limit s':>8}  stopped in")
    print(f"{len(results):>7} {passed:>7} {times[len(times) // 2]:>9.1f} "
          f"{times[-1]:>7.1f} {opts['--timeout'] + opts['--slack']:>8.1f}  "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

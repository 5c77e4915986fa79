"""Kills `cleave run PLAN` (SIGKILL, which it cannot catch) once mpirun and
the workers run (PLAN's steps are long: nothing is printed, so mpirun does
not notice the closed pipe by writing to it), then counts the processes
still running PLAN (mpirun and the workers name it on their command lines)
for up to 5 s. Leftovers are killed so that a failure leaks nothing into
other tests.

usage: kill_launcher.py CLEAVE PLAN
"""
import os
import signal
import subprocess
import sys
import time


def holders(plan):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if plan.encode() in args and b"kill_launcher.py" not in b" ".join(args):
            pids.append(int(entry))
    return pids


def main():
    cleave, plan = sys.argv[1], os.path.abspath(sys.argv[2])
    launcher = subprocess.Popen([cleave, "run", plan, "--steps", "100000"],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    # mpirun and at least one worker, then a moment into the first step.
    deadline = time.time() + 60
    while len(holders(plan)) < 2 and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1)
    before = len(holders(plan))
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    killed_at = time.time()
    left = holders(plan)
    while left and time.time() - killed_at < 5:
        time.sleep(0.1)
        left = holders(plan)
    print("processes running the plan before the kill: %s" %
          ("some" if before > 0 else "none"))
    print("left 5 s after the launcher was killed: %d" % len(left))
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    main()

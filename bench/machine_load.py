"""How busy this machine is, for benchmarks on a shared machine.

LoadMeter measures the CPU cores other processes used while a measurement
ran (from /proc/stat, minus this process and its children); wait_idle waits
until the machine is quiet before measuring.
"""

import os
import resource
import time


def _cpu_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]) - v[3] - v[4]


class LoadMeter:
    """Other processes' CPU use while a measurement runs, in cores."""

    def __enter__(self):
        self.t = time.time()
        self.busy = _cpu_jiffies()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = resource.getrusage(resource.RUSAGE_SELF)
        self.ours = r.ru_utime + r.ru_stime + s.ru_utime + s.ru_stime
        return self

    def __exit__(self, *exc):
        wall = time.time() - self.t
        busy = (_cpu_jiffies() - self.busy) / os.sysconf("SC_CLK_TCK")
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = resource.getrusage(resource.RUSAGE_SELF)
        ours = r.ru_utime + r.ru_stime + s.ru_utime + s.ru_stime - self.ours
        self.other_cores = max(0.0, busy - ours) / max(wall, 1e-9)


def wait_idle(limit_s, threshold=0.25):
    """Waits (up to limit_s) until others use < threshold cores over 2 s."""
    t0 = time.time()
    while True:
        with LoadMeter() as m:
            time.sleep(2)
        if m.other_cores < threshold or time.time() - t0 > limit_s:
            return m.other_cores

"""Runs a command and says whether its peak resident memory stays within a
multiple of a size (the weights of the model it reads).

    peak_memory.py LIMIT_RATIO SIZE_BYTES -- COMMAND...

Prints "peak within Nx" or "peak R.Rx the size (limit N)" and exits with
the command's status. The peak is the kernel's maxrss of the child.
"""
import resource
import subprocess
import sys

ratio, size = float(sys.argv[1]), int(sys.argv[2])
assert sys.argv[3] == "--"
status = subprocess.run(sys.argv[4:], stdout=subprocess.DEVNULL).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
if peak <= ratio * size:
    print("peak within %gx" % ratio)
else:
    print("peak %.1fx the size (limit %g)" % (peak / size, ratio))
sys.exit(status)

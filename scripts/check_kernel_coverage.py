#!/usr/bin/env python3
"""Every op a plan runs has a kernel on a backend.

Reads `cleave inspect PLAN --rank R` listings (one file per rank, or stdin)
and the backend's op list (`cleave-worker --kernels --backend B`), and
fails naming each op of the plan that the backend cannot run.

usage: check_kernel_coverage.py KERNELS_FILE LISTING...
"""
import re
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        kernels = {line.strip() for line in f if line.strip()}
    if not kernels:
        print(f"{sys.argv[1]}: no kernels listed", file=sys.stderr)
        return 2
    used = set()
    for path in sys.argv[2:]:
        with open(path) as f:
            used |= set(re.findall(r"\b(?:graph|comm|runtime)\.[a-z_0-9]+",
                                   f.read()))
    if not used:
        print("no ops found in the listings", file=sys.stderr)
        return 2
    missing = sorted(used - kernels)
    for op in missing:
        print(f"no kernel: {op}")
    print(f"{len(used)} ops used, {len(missing)} without a kernel")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Names the buckets that `binder-bench --profile` printed (PROFILE lines of a
ptest.log) with the kernel's System.map and sums them per function.

    profile_report.py SYSTEM_MAP PTEST_LOG [TOP]
"""
import bisect
import collections
import sys


def symbols(system_map):
    """The text symbols of SYSTEM_MAP, sorted: (addresses, names)."""
    syms = []
    for line in open(system_map):
        addr, kind, name = line.split()[:3]
        if kind in "tTwW":
            syms.append((int(addr, 16), name))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def main(system_map, log, top="40"):
    addrs, names = symbols(system_map)
    stext = addrs[names.index("_stext")]
    step, ticks = None, collections.Counter()
    for line in open(log):
        f = line.split()
        if len(f) == 3 and f[0] == "PROFILE" and f[1] == "step":
            step = int(f[2])
        elif len(f) == 3 and f[0] == "PROFILE" and f[1].isdigit():
            if step is None:
                sys.exit(f"{log}: PROFILE buckets before the step line")
            pc = stext + int(f[1]) * step
            ticks[names[bisect.bisect_right(addrs, pc) - 1]] += int(f[2])
    total = sum(ticks.values())
    if not total:
        sys.exit(f"{log}: no PROFILE lines (was the kernel booted with profile=2?)")
    print(f"{total} ticks in the kernel")
    for name, n in ticks.most_common(int(top)):
        print(f"{n:7d} {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])

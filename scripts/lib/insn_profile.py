#!/usr/bin/env python3
"""Instructions per kernel function from qemu's -d nochain,exec,in_asm log.

    insn_profile.py sum SYSTEM_MAP QEMU_LOG OUT.json
        sums, per function of SYSTEM_MAP (blocks below its first symbol as
        one row, "(user space)"), the instructions of every block
        run (a block's size is the number of instructions of its "IN:"
        listing, printed when it is translated, just before its first
        "Trace" line; blocks are keyed by their host address) and the
        blocks that start at the function's first instruction (calls).
    insn_profile.py report N TOP NAME SMALL.json BIG.json [NAME SMALL BIG...]
        (BIG - SMALL) / N per function, one column pair per NAME, biggest
        first, and the totals.
"""
import bisect
import collections
import json
import sys

from profile_report import symbols


def summ(system_map, log, out):
    addrs, names = symbols(system_map)
    starts = set(addrs)
    size = {}
    insns, calls = collections.Counter(), collections.Counter()
    fn_of = {}
    listed, first_pc = 0, None
    with open(log, "rb") as f:
        for line in f:
            if line.startswith(b"0x"):
                if listed == 0:
                    first_pc = int(line[2:line.index(b":")], 16)
                listed += 1
            elif line.startswith(b"IN:"):
                listed = 0
            elif line.startswith(b"Trace"):
                i = line.index(b"[")
                host = line[line.index(b":") + 2:i - 1]
                pc = int(line[i + 1:].split(b"/")[1], 16)
                if listed:
                    size[host] = (first_pc, listed)
                    listed = 0
                block = size.get(host)
                if block is None or block[0] != pc:
                    continue
                fn = fn_of.get(pc)
                if fn is None:
                    i = bisect.bisect_right(addrs, pc) - 1
                    # Below the kernel's first symbol: user space (logged
                    # only without insn-profile's kernel-text filter).
                    fn = fn_of[pc] = names[i] if i >= 0 else "(user space)"
                insns[fn] += block[1]
                if pc in starts:
                    calls[fn] += 1
    if not insns:
        sys.exit(f"{log}: no blocks (was qemu run with -d nochain,exec,in_asm?)")
    json.dump({"insns": insns, "calls": calls}, open(out, "w"))


def report(n, top, *runs):
    n, top = int(n), int(top)
    cols = []
    for i in range(0, len(runs), 3):
        name, small, big = runs[i:i + 3]
        s, b = json.load(open(small)), json.load(open(big))
        per = {}
        for key in ("insns", "calls"):
            for fn in set(s[key]) | set(b[key]):
                per.setdefault(fn, {})[key] = (b[key].get(fn, 0) - s[key].get(fn, 0)) / n
        cols.append((name, per))
    fns = set().union(*(per for _, per in cols))
    what = "all code" if "(user space)" in fns else "kernel only"
    print(f"instructions (calls) per operation, {what}")
    print("".join(f"{name:>20}" for name, _ in cols) + "  function")
    print("".join(f"{sum(p.get('insns', 0) for p in per.values()):20.0f}" for _, per in cols) + "  (total)")
    biggest = sorted(fns, key=lambda fn: -max(abs(per.get(fn, {}).get("insns", 0)) for _, per in cols))
    for fn in biggest[:top]:
        cells = []
        for _, per in cols:
            p = per.get(fn, {})
            cells.append(f"{p.get('insns', 0):12.1f} ({p.get('calls', 0):4.1f})")
        print("".join(f"{c:>20}" for c in cells) + "  " + fn)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "sum":
        summ(*sys.argv[2:5])
    elif len(sys.argv) >= 7 and sys.argv[1] == "report" and (len(sys.argv) - 4) % 3 == 0:
        report(*sys.argv[2:])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""Summaries of scripts/syzkaller's runs.

  syz_report.py OUT [DRIVER...]   write OUT/DRIVER/summary.txt for each
                                  driver (default: every folder of OUT with a
                                  bench.json) and OUT/table.md, print the table
  syz_report.py --execs RUNDIR    print the run's total executions

A run folder holds the manager's bench.json (its statistics as JSON objects,
one a minute), filecover.csv (its /filecover page: covered and total PCs of
each source file), rawcover.txt (its /rawcover page: every covered PC),
manager.cfg and crashes/ (a folder per crash title, with description).

syzkaller's coverage report lists the C files only (it leaves out Rust's
compile units), so the Rust driver's coverage is counted here: its PCs are
the calls to __sanitizer_cov_trace_pc in rust_binder.o's code in vmlinux
(the .text functions of the object, found by name; the manager's PCs are
those call instructions), mapped to source files with addr2line. Counted so,
binder.o gives the same figures as the manager's report for binder.c.
"""
import collections
import csv
import json
import os
import re
import subprocess
import sys

ANDROID = "drivers/android/"


def bench(run):
    """The last statistics the manager wrote, or {}."""
    try:
        text = open(os.path.join(run, "bench.json")).read()
    except OSError:
        return {}
    dec = json.JSONDecoder()
    last, i = {}, 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return last
        try:
            last, i = dec.raw_decode(text, i)
        except ValueError:
            return last


def files(run):
    """{file: (covered PCs, total PCs)} of drivers/android/, from filecover.csv."""
    out = {}
    try:
        rows = list(csv.DictReader(open(os.path.join(run, "filecover.csv"))))
    except OSError:
        return out
    for r in rows:
        name = r.get("Filename", "")
        k = name.find(ANDROID)
        if k < 0:
            continue
        try:
            out[name[k:]] = (int(r["CoveredPCs"]), int(r["TotalPCs"]))
        except (KeyError, ValueError):
            continue
    return out


def tool(name, *args):
    return subprocess.run(["aarch64-linux-gnu-" + name, *args], capture_output=True,
                          text=True, check=True).stdout


def object_sites(kobj, obj):
    """The addresses in vmlinux of obj's KCOV call sites."""
    names = set()
    for line in tool("objdump", "-t", os.path.join(kobj, obj)).splitlines():
        p = line.split()
        if len(p) >= 6 and p[-3] == ".text" and "F" in p[-4]:
            names.add(p[-1])
    nm = [line.split() for line in tool("nm", "-S", os.path.join(kobj, "vmlinux")).splitlines()]
    count = collections.Counter(p[-1] for p in nm if p)
    lo = hi = None
    for p in nm:
        if len(p) == 4 and p[2] in "tT" and p[3] in names and count[p[3]] == 1:
            a, n = int(p[0], 16), int(p[1], 16)
            lo = a if lo is None else min(lo, a)
            hi = a + n if hi is None else max(hi, a + n)
    if lo is None:
        return []
    dis = tool("objdump", "-d", "--no-show-raw-insn", f"--start-address={lo}",
               f"--stop-address={hi}", os.path.join(kobj, "vmlinux"))
    return [int(m.group(1), 16) for m in
            re.finditer(r"^\s*([0-9a-f]+):\s+bl\s+[0-9a-f]+ <__sanitizer_cov_trace_pc>", dis, re.M)]


def rust_files(run):
    """{file: (covered, total)} of the Rust driver, from rawcover.txt."""
    try:
        cfg = json.load(open(os.path.join(run, "manager.cfg")))
        raw = open(os.path.join(run, "rawcover.txt")).read().split()
    except (OSError, ValueError):
        return {}
    kobj = cfg["kernel_obj"]
    covered = set(int(x, 16) for x in raw if x.startswith("0x"))
    try:
        sites = object_sites(kobj, "drivers/android/rust_binder.o")
        where = tool("addr2line", "-e", os.path.join(kobj, "vmlinux"),
                     *[hex(a) for a in sites]).splitlines() if sites else []
    except (OSError, subprocess.CalledProcessError):
        return {}
    out = collections.defaultdict(lambda: [0, 0])
    for a, w in zip(sites, where):
        f = w.rsplit(":", 1)[0]
        k = f.find(ANDROID)
        f = f[k:] if k >= 0 else "(inlined from the kernel crate and core)"
        out[f][1] += 1
        out[f][0] += a in covered
    return {f: tuple(v) for f, v in out.items()}


def crashes(run):
    out = []
    d = os.path.join(run, "crashes")
    for c in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        try:
            title = open(os.path.join(d, c, "description")).read().strip()
        except OSError:
            title = c
        n = len([f for f in os.listdir(os.path.join(d, c)) if f.startswith("log")])
        repro = [f for f in ("repro.prog", "repro.cprog") if os.path.exists(os.path.join(d, c, f))]
        out.append((title, n, repro, os.path.join(d, c)))
    return out


def cover_sum(fc, lang):
    if lang == "c":
        keys = [f for f in fc if f.endswith(".c")]
    else:
        keys = [f for f in fc if not f.endswith((".c", ".h"))]
    return sum(fc[f][0] for f in keys), sum(fc[f][1] for f in keys)


def pct(c, t):
    return f"{c}/{t} ({100.0 * c / t:.1f}%)" if t else "n/a"


def summary(run, driver):
    b, fc, cr = bench(run), files(run), crashes(run)
    fc.update(rust_files(run))
    try:
        minutes = open(os.path.join(run, "minutes")).read().strip()
    except OSError:
        minutes = "?"
    lines = [
        f"driver: {driver} (binder.impl={driver})",
        f"minutes: {minutes}",
        f"executions: {b.get('exec total', 0)}",
        f"corpus: {b.get('corpus', 0)}",
        f"coverage (PCs, whole kernel): {b.get('coverage', 0)}",
        f"signal: {b.get('signal', 0)}",
        f"crashes: {len(cr)} types, {b.get('crashes', 0)} in all",
        f"drivers/android/ C PCs covered: {pct(*cover_sum(fc, 'c'))}",
        f"drivers/android/ Rust PCs covered (rust_binder.o): {pct(*cover_sum(fc, 'rust'))}",
        "",
        "covered/total PCs by file:",
    ]
    for f in sorted(fc):
        lines.append(f"  {f}: {pct(*fc[f])}")
    if not fc:
        lines.append("  (no filecover.csv: the manager gave no coverage report)")
    lines.append("")
    lines.append("crashes:" if cr else "crashes: none")
    for title, n, repro, path in cr:
        lines.append(f"  {title} ({n} logs; {', '.join(repro) or 'no reproducer'}): {path}")
    text = "\n".join(lines) + "\n"
    open(os.path.join(run, "summary.txt"), "w").write(text)
    return b, fc, cr, minutes


def main(argv):
    if argv[:1] == ["--execs"]:
        print(bench(argv[1]).get("exec total", 0))
        return 0
    out = argv[0]
    drivers = argv[1:] or sorted(
        d for d in os.listdir(out) if os.path.exists(os.path.join(out, d, "bench.json"))
    )
    rows = [
        "| driver | minutes | executions | corpus | coverage (kernel PCs) "
        "| drivers/android/ C PCs | drivers/android/ Rust PCs | crashes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in drivers:
        b, fc, cr, minutes = summary(os.path.join(out, d), d)
        titles = "; ".join(t for t, _, _, _ in cr) or "0"
        rows.append(
            f"| {d} | {minutes} | {b.get('exec total', 0)} | {b.get('corpus', 0)} "
            f"| {b.get('coverage', 0)} | {pct(*cover_sum(fc, 'c'))} "
            f"| {pct(*cover_sum(fc, 'rust'))} | {titles} |"
        )
    text = "\n".join(rows) + "\n"
    open(os.path.join(out, "table.md"), "w").write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

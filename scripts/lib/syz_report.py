#!/usr/bin/env python3
"""Summaries of scripts/syzkaller's runs.

  syz_report.py OUT [DRIVER...]   write OUT/DRIVER/summary.txt for each
                                  driver (default: every folder of OUT with a
                                  bench.json) and OUT/table.md, print the table
  syz_report.py --execs RUNDIR    print the run's total executions

A run folder holds the manager's bench.json (its statistics as JSON objects,
one a minute), filecover.csv (its /filecover page: covered and total PCs of
each source file) and crashes/ (a folder per crash title, with description).
"""
import csv
import json
import os
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
    ext = ".c" if lang == "c" else ".rs"
    cov = sum(v[0] for f, v in fc.items() if f.endswith(ext))
    tot = sum(v[1] for f, v in fc.items() if f.endswith(ext))
    return cov, tot


def pct(c, t):
    return f"{c}/{t} ({100.0 * c / t:.1f}%)" if t else "n/a"


def summary(run, driver):
    b, fc, cr = bench(run), files(run), crashes(run)
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
        f"drivers/android/ Rust PCs covered: {pct(*cover_sum(fc, 'rust'))}",
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

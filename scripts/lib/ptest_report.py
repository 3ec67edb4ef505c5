#!/usr/bin/env python3
"""Read the results of one harness boot; compare two boots.

    ptest_report.py summarize DIR [DEFECTS DRIVER [DIFFS]]
                                    ptest.log + console.log of DIR -> junit.xml,
                                    results.txt (one "RESULT name" per test),
                                    prints "passed failed skipped" and the problems;
                                    a FAIL that DEFECTS lists for DRIVER, or that
                                    the known differences DIFFS of a reference
                                    kernel expect on DRIVER, becomes KNOWN
                                    (counted as skipped, with its reason)
    ptest_report.py compare DIR_A DIR_B [KNOWN]
                                    tests whose result differs between two boots
                                    (KNOWN: a list of explained differences)
    ptest_report.py matrix DIR...   a Markdown table of every test whose result
                                    is not the same in all DIRs (e.g. C and Rust
                                    on 6.12 and on 7.2), and a count per DIR
    ptest_report.py soak DEFECTS DRIVER=DIR...
                                    scripts/soak's boots (ptest.log of
                                    scripts/guest/mrb-soak, console.log): every
                                    test whose result changed across rounds or
                                    drivers, every FAIL with the command that
                                    reproduces it; "N runs, N tests, N flaky,
                                    N failed"; exit status 1 unless all clean
"""
import re
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

RESULT = re.compile(r"^(PASS|FAIL|SKIP): (.+?)\s*$")
# Kernel splats: any of these in the console fails the run. Besides the
# WARN/BUG/KASAN/lockdep reports, the lines 6.12 prints (often only at
# KERN_WARNING or KERN_ERR, with no backtrace) when it finds a leak or a
# corruption: a POSIX lock that outlived its file (fs/locks.c), a page freed or
# mapped in a bad state (mm/page_alloc.c, mm/memory.c), rss counters gone wrong
# at exit, slab poison or red zones overwritten (mm/slub.c), list corruption
# (lib/list_debug.c), and the rust_binder driver's own lines for a broken
# invariant ("cannot clear buffer", "freeze notifications of ... not sent").
SPLAT = re.compile(
    r"(Oops|BUG:|KASAN:|UBSAN:|WARNING:|Kernel panic|Unable to handle kernel|"
    r"possible recursive locking|possible circular locking|inconsistent lock state|"
    r"panicked at|rust_panic|kernel BUG|list_add corruption|list_del corruption|"
    r"detected stall|hung_task|unreferenced object|refcount_t:|"
    r"Leaked \w+ lock on|Leaked locks on|Bad page state|"
    r"Bad page map|Bad rss-counter|page dumped because|Poison overwritten|"
    r"Redzone overwritten|Object padding overwritten|Freepointer corrupt|"
    r"double free|stack-protector|VFS: Close: file count is 0|"
    r"rust_binder: cannot clear buffer|rust_binder: freeze notifications of)"
)
# The last line of a run: "TOTAL: <packages> FAIL: <failed>" (ptest-runner2's
# and mrb-ptest-runner's), and the runner's exit status, which the guest's
# /init prints after ptest-runner2 (a comment line for the parser above).
TOTAL = re.compile(r"^TOTAL: (\d+) FAIL: (\d+)$")
EXIT = re.compile(r"^# ptest-runner exit status: (\d+)$")
KTAP_CASE = re.compile(r"^(?:\[[^\]]*\] )?    (not ok|ok) \d+ (\S+)(.*)$")
KTAP_SUITE = re.compile(r"^(?:\[[^\]]*\] )?    # Subtest: (\S+)")
# A multilib build of a ptest package (Yocto's lib32-<pkg>, e.g. the 32-bit
# conformance suite) reports the same test names: they get this prefix, and a
# known defect or difference listed for the plain name covers them too.
MULTILIB = "lib32"


def base_name(name):
    return name[len(MULTILIB) + 1:] if name.startswith(MULTILIB + ":") else name


def drop_known_exit(tests, problems):
    """problems without the non-zero exit status of a package whose only
    failures are known defects: that exit status is the known defect too."""
    for pkg in {p for p, _, r, _ in tests if r == "KNOWN"}:
        if not any(p == pkg and r == "FAIL" for p, _, r, _ in tests):
            problems = [x for x in problems if not x.startswith(f"{pkg}: ERROR: Exit status is")]
    return problems


def parse_ptest(text):
    """Yield (package, name, result, detail) and collect structural problems."""
    tests, problems = [], []
    pkg, seen, stopped, comment = None, 0, False, []
    begun, errors, total, exit_status = 0, 0, None, None
    for line in text.splitlines():
        if line.startswith("BEGIN: "):
            begun += 1
            pkg, seen, comment = line[7:].split("/")[3] if line.count("/") > 3 else line[7:], 0, []
        elif line.startswith("END: "):
            if seen == 0:
                problems.append(f"{pkg}: no PASS/FAIL/SKIP line at all")
            pkg = None
        elif line.startswith("TIMEOUT: "):
            problems.append(f"{pkg}: timed out")
            errors += 1
        elif line.startswith(("ERROR: Exit status is", "ERROR: Exited from signal",
                              "ERROR: Exited for unknown reason")):
            # ptest-runner2 reports a run-ptest killed by a signal (its own
            # SIGKILL after -t seconds without output, or a crash) so.
            problems.append(f"{pkg}: {line}")
            errors += 1
        elif line.startswith("STOP: ptest-runner"):
            stopped = True
        elif TOTAL.match(line):
            total = tuple(int(x) for x in TOTAL.match(line).groups())
        elif EXIT.match(line):
            exit_status = int(EXIT.match(line).group(1))
        elif line.startswith("#"):
            comment.append(line)
            del comment[:-5]
        else:
            m = RESULT.match(line)
            if m:
                seen += 1
                name = m.group(2)
                if (pkg or "").startswith(MULTILIB + "-"):
                    name = f"{MULTILIB}:{name}"
                tests.append((pkg or "?", name, m.group(1), "\n".join(comment)))
                comment = []
    if not stopped:
        problems.append("ptest-runner never finished (guest crashed or hung)")
    # The runner's own summary: "TOTAL: <packages> FAIL: <n>", where n counts
    # each non-zero exit, signal and timeout (a package that timed out counts
    # twice: killed, and timed out), and its exit status (printed by the
    # guest's /init after ptest-runner2) is 1 exactly when n > 0.
    if stopped and total is not None and total != (begun, errors):
        problems.append(f"the runner's summary 'TOTAL: {total[0]} FAIL: {total[1]}' does not match "
                        f"its log ({begun} packages, {errors} failed exits or timeouts)")
    if exit_status is not None and stopped and exit_status != (1 if errors else 0):
        problems.append(f"ptest-runner exited with status {exit_status} after {errors} failed exits or timeouts")
    return tests, problems


def parse_kunit(console):
    tests, suite = [], "?"
    for line in console.splitlines():
        m = KTAP_SUITE.match(line)
        if m:
            suite = m.group(1)
            continue
        m = KTAP_CASE.match(line)
        if m:
            res = "SKIP" if "# SKIP" in m.group(3) else ("PASS" if m.group(1) == "ok" else "FAIL")
            tests.append(("kunit", f"kunit::{suite}::{m.group(2)}", res, m.group(3)))
    return tests


def load_defects(path, driver):
    """The tests that DEFECTS (lines "driver test reason") lists for DRIVER."""
    out = {}
    if path and Path(path).exists():
        for line in Path(path).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                drv, name, *why = line.split()
                if drv == driver:
                    out[name] = " ".join(why)
    return out


def load_differences(path, driver):
    """The tests that the known-differences list DIFFS (lines "name C Rust category")
    expects to FAIL on DRIVER ("c" or "rust"): on a reference kernel, the places where
    its two drivers disagree, each explained in docs/oracle.md."""
    out = {}
    col = {"c": 1, "rust": 2}.get(driver)
    if path and col and Path(path).exists():
        for line in Path(path).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                f = line.split()
                if f[col] == "FAIL":
                    out[f[0]] = f"known difference between the reference drivers (category {' '.join(f[3:])}, docs/oracle.md)"
    return out


def summarize(d, defects=None, driver=None, diffs=None):
    d = Path(d)
    known = load_defects(defects, driver)
    known.update(load_differences(diffs, driver))
    ptest = (d / "ptest.log").read_text(errors="replace") if (d / "ptest.log").exists() else ""
    console = (d / "console.log").read_text(errors="replace") if (d / "console.log").exists() else ""
    tests, problems = parse_ptest(ptest)
    tests += parse_kunit(console)
    splats = [l for l in console.splitlines() if SPLAT.search(l)]
    if splats:
        problems.append("kernel splat in console.log:\n    " + "\n    ".join(splats[:20]))
    known.update({n: known[base_name(n)] for _, n, _, _ in tests if base_name(n) in known})
    tests = [(p, n, "KNOWN" if r == "FAIL" and n in known else r, x) for p, n, r, x in tests]
    problems = drop_known_exit(tests, problems)
    names = {}
    for pkg, name, res, _ in tests:
        if name in names:
            problems.append(f"test reported twice: {name}")
        names[name] = res
    (d / "results.txt").write_text("".join(f"{r} {n}\n" for n, r in names.items()))
    with open(d / "junit.xml", "w") as j:
        fails = sum(1 for t in tests if t[2] == "FAIL")
        skips = sum(1 for t in tests if t[2] in ("SKIP", "KNOWN"))
        j.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="{len(tests)}" failures="{fails}" skipped="{skips}">\n')
        pkgs = sorted({t[0] for t in tests})
        for p in pkgs:
            ts = [t for t in tests if t[0] == p]
            j.write(f'  <testsuite name={quoteattr(p)} tests="{len(ts)}">\n')
            for _, name, res, detail in ts:
                j.write(f"    <testcase classname={quoteattr(p)} name={quoteattr(name)}>")
                if res == "FAIL":
                    j.write(f"<failure message={quoteattr(detail or 'FAIL')}/>")
                elif res == "SKIP":
                    j.write(f"<skipped message={quoteattr(detail or 'SKIP')}/>")
                elif res == "KNOWN":
                    j.write(f"<skipped message={quoteattr('known on the ' + driver + ' driver: ' + known[name])}/>")
                j.write("</testcase>\n")
            j.write("  </testsuite>\n")
        j.write("</testsuites>\n")
    for pkg, name, res, detail in tests:
        if res == "FAIL":
            print(f"FAIL: {name}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
        elif res == "KNOWN":
            print(f"KNOWN: {name}: on the {driver} driver: {known[name]}", file=sys.stderr)
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    counts = [sum(1 for t in tests if t[2] in r) for r in (("PASS",), ("FAIL",), ("SKIP", "KNOWN"))]
    counts[1] += len(problems)
    print(*counts)
    return 0


def fail(r):
    """A KNOWN result is a FAIL that a list expects."""
    return "FAIL" if r == "KNOWN" else r


def compare(a, b, known=None):
    """Print the tests whose result differs between boots A and B, then their
    count. With KNOWN (lines "name resultA resultB category"), a listed
    difference is reported but not counted; a listed one that did not happen
    is counted, so the list stays the truth."""
    ra, rb = load(a), load(b)
    expected = {}
    if known and Path(known).exists():
        for line in Path(known).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                name, x, y, *cat = line.split()
                expected[name] = (x, y, " ".join(cat))
    diff = 0
    for name in sorted(set(ra) | set(rb)):
        if name.startswith("kunit::"):
            continue  # KUnit runs the same doctests whichever driver is active
        x, y = ra.get(name, "MISSING"), rb.get(name, "MISSING")
        if x == y:
            continue
        if "KNOWN" in (x, y) and {x, y} <= {"KNOWN", "PASS"}:
            print(f"KNOWN: {name}: {Path(a).name}={x} {Path(b).name}={y} (known defect, see the known-defects list)")
            continue
        if expected.get(base_name(name), (None, None))[:2] == (fail(x), fail(y)):
            print(f"KNOWN: {name}: {Path(a).name}={x} {Path(b).name}={y} ({expected[base_name(name)][2]})")
            continue
        print(f"DIFFERS: {name}: {Path(a).name}={x} {Path(b).name}={y}")
        diff += 1
    for name, (x, y, cat) in sorted(expected.items()):
        got = (ra.get(name, "MISSING"), rb.get(name, "MISSING"))
        if got == ("SKIP", "SKIP"):
            # Skipped on both drivers (each says why, e.g. a timing test whose window was too
            # short here): the run checked nothing either way, so nothing vanished.
            print(f"NOT CHECKED: {name}: listed in {known} as {x}/{y}, skipped on both drivers")
            continue
        if (fail(got[0]), fail(got[1])) != (x, y):
            print(f"VANISHED: {name}: listed in {known} as {x}/{y}, now "
                  f"{ra.get(name, 'MISSING')}/{rb.get(name, 'MISSING')}")
            diff += 1
    print(diff)
    return 0


def load(d):
    return dict(l.split(" ", 1)[::-1] for l in (Path(d) / "results.txt").read_text().split("\n") if l)


def matrix(*dirs):
    res = [load(d) for d in dirs]
    heads = [Path(d).name for d in dirs]
    print("| test | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(dirs))
    names = sorted(set().union(*res))
    for n in names:
        if n.startswith("kunit::"):
            continue
        row = [r.get(n, "-") for r in res]
        if len(set(row)) > 1:
            print(f"| `{n}` | " + " | ".join(row) + " |")
    print()
    for h, r in zip(heads, res):
        c = {k: sum(1 for n, v in r.items() if v == k and not n.startswith("kunit::")) for k in ("PASS", "FAIL", "SKIP")}
        print(f"- {h}: {c['PASS']} passed, {c['FAIL']} failed, {c['SKIP']} skipped")
    return 0


SOAK_ROUND = re.compile(r"^SOAK-ROUND: (\S+) seed=(\d+)")


def soak_runs(driver, d, known):
    """(runs, problems) of one soak boot: a run is (driver, round, seed, package,
    test name, result, detail); round is "1".."N", "fuzz" or "boot" (KUnit)."""
    d = Path(d)
    ptest = (d / "ptest.log").read_text(errors="replace") if (d / "ptest.log").exists() else ""
    console = (d / "console.log").read_text(errors="replace") if (d / "console.log").exists() else ""
    runs, problems, chunks = [], [], []
    for line in ptest.splitlines():
        m = SOAK_ROUND.match(line)
        if m:
            chunks.append((m.group(1), m.group(2), []))
        elif chunks:
            chunks[-1][2].append(line)
    for rnd, seed, lines in chunks:
        tests, probs = parse_ptest("\n".join(lines))
        tests = [(p, n, "KNOWN" if r == "FAIL" and base_name(n) in known else r, x)
                 for p, n, r, x in tests]
        probs = drop_known_exit(tests, probs)
        problems += [f"{driver} round {rnd} (seed {seed}): {p}" for p in probs]
        runs += [(driver, rnd, seed, p, n, r, x) for p, n, r, x in tests]
    runs += [(driver, "boot", "-", p, n, r, x) for p, n, r, x in parse_kunit(console)]
    if "SOAK-DONE" not in ptest.splitlines():
        problems.append(f"{driver}: the soak never finished (guest crashed, hung or timed out; "
                        f"{d}/console.log); rounds seen: {' '.join(c[0] for c in chunks) or 'none'}")
    splats = [l for l in console.splitlines() if SPLAT.search(l)]
    if splats:
        problems.append(f"{driver}: kernel splat in {d}/console.log:\n    " + "\n    ".join(splats[:20]))
    return runs, problems


def reproduce(driver, rnd, seed, pkg, name, rounds):
    """The command that runs a failing test again as the soak ran it."""
    if rnd == "boot":
        return f"scripts/qemu-run --driver {driver} (KUnit runs at boot; console.log)"
    if pkg == "binder-fuzz":
        return (f"scripts/qemu-run --driver {driver} --ptest --only binder-fuzz --env FUZZ_SEED={seed}"
                " (the replay of a failing fuzz round is in the lines above the FAIL)")
    if name.split("::")[0].endswith("kmemleak"):
        return (f"scripts/soak --kmemleak --driver {driver} --rounds {rounds} --seed {int(seed) - int(rnd) + 1}"
                " (the backtraces are in ptest.log)")
    test = base_name(name)
    return (f"scripts/soak --driver {driver} --rounds 1 --seed {seed} --no-fuzz; in a shell "
            f"(scripts/qemu-run --driver {driver}): /usr/lib/{pkg}/ptest/run-ptest --shuffle {seed} "
            f"--timeout 60; the test alone: /usr/lib/{pkg}/ptest/run-ptest --timeout 60 {test}")


def soak(defects, *pairs):
    runs, problems = [], []
    drivers = []
    for pair in pairs:
        driver, d = pair.split("=", 1)
        drivers.append(driver)
        r, p = soak_runs(driver, d, load_defects(defects, driver))
        runs += r
        problems += p
    numbered = [int(r[1]) for r in runs if r[1].isdigit()]
    rounds = max(numbered) if numbered else 0
    by_name = {}
    for run in runs:
        by_name.setdefault(run[4], []).append(run)
    # A test is expected in every (driver, round) of a round label in which
    # it ran on any driver: a missing result is a result too.
    flaky, failed = [], 0
    for name, rs in sorted(by_name.items()):
        seen = {(r[0], r[1]) for r in rs}
        labels = {r[1] for r in rs}
        missing = [(drv, rnd) for drv in drivers for rnd in sorted(labels) if (drv, rnd) not in seen]
        results = {r[5] if r[5] != "KNOWN" else "PASS" for r in rs}
        if missing:
            results.add("MISSING")
        if len(results) > 1:
            flaky.append((name, rs, missing))
    for name, rs, missing in flaky:
        print(f"CHANGED: {name}: (round/seed=result)")
        for drv in drivers:
            line = " ".join(f"{r[1]}/{r[2]}={r[5]}" for r in rs if r[0] == drv)
            line += "".join(f" {rnd}=MISSING" for d2, rnd in missing if d2 == drv)
            print(f"    {drv}: {line}")
    for drv, rnd, seed, pkg, name, res, detail in runs:
        if res == "FAIL":
            failed += 1
            print(f"FAIL: {name} ({drv} driver, round {rnd}, seed {seed})")
            for l in detail.splitlines():
                print(f"    {l}")
            print(f"    reproduce: {reproduce(drv, rnd, seed, pkg, name, rounds)}")
        elif res == "KNOWN":
            print(f"KNOWN: {name} ({drv} driver, round {rnd}): a known defect of the {drv} driver ({defects})")
    for p in problems:
        print(f"PROBLEM: {p}")
    for drv in drivers:
        mine = [r for r in runs if r[0] == drv]
        c = {k: sum(1 for r in mine if r[5] == k) for k in ("PASS", "FAIL", "SKIP", "KNOWN")}
        n = len({r[1] for r in mine if r[1].isdigit()})
        leaks = " ".join(f"{r[4]}={r[5]}" for r in mine if "kmemleak::" in r[4])
        print(f"{drv}: {n} rounds, {c['PASS']} passed, {c['FAIL']} failed, {c['SKIP']} skipped, "
              f"{c['KNOWN']} known; kmemleak: {leaks or 'off'}")
    print(f"{len(runs)} runs, {len(by_name)} tests, {len(flaky)} flaky, {failed + len(problems)} failed")
    return 0 if not flaky and not failed and not problems else 1


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    sys.exit({"summarize": summarize, "compare": compare, "matrix": matrix, "soak": soak}[cmd](*args))

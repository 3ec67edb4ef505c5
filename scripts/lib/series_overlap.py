#!/usr/bin/env python3
"""Which patches of the series change lines that an earlier patch of the
series added (issue 18: a patch should only extend earlier ones, never repair
them). Run on a git tree holding the series as commits on top of BASE.

    series_overlap.py TREE BASE

For each commit after BASE, the lines it removes or replaces (the old side of
`git diff -U0`) are blamed at its parent; those that an earlier commit of the
series added are counted per earlier commit. Prints one line per patch that
changes lines of earlier ones and a summary. Such a patch is allowed when it
is a feature that extends what it changes and its message says so (it
contains "extends"); exits 1 if any patch changes earlier lines without
saying so.
"""
import collections
import re
import subprocess
import sys


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, *args], check=True,
                          capture_output=True, text=True).stdout


def old_ranges(tree, commit):
    """(path, start, count) of every run of old lines the commit removes."""
    path = None
    for line in git(tree, "diff", "-U0", "--no-renames", commit + "^", commit).splitlines():
        if line.startswith("--- "):
            path = None if line == "--- /dev/null" else line[6:]
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+", line)
        if m and path:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            if count:
                yield path, start, count


def main(tree, base):
    commits = git(tree, "rev-list", "--reverse", base + "..HEAD").split()
    number = {c: i + 1 for i, c in enumerate(commits)}
    overlapping = unsaid = 0
    for c in commits:
        hits = collections.Counter()
        for path, start, count in old_ranges(tree, c):
            blame = git(tree, "blame", "--porcelain", "-L", f"{start},+{count}",
                        c + "^", "--", path)
            for line in blame.splitlines():
                m = re.match(r"([0-9a-f]{40}) \d+ \d+", line)
                if m and m.group(1) in number:
                    hits[number[m.group(1)]] += 1
        if hits:
            overlapping += 1
            subject = git(tree, "log", "-1", "--format=%s", c).strip()
            said = re.search(r"\bextends\b", git(tree, "log", "-1", "--format=%b", c))
            unsaid += not said
            parts = ", ".join(f"{n} of {k:04d}" for k, n in sorted(hits.items()))
            how = ("extends lines of earlier patches, as its message says" if said
                   else "changes lines of earlier patches without saying it extends them")
            print(f"{number[c]:04d} {subject}: {how} ({parts})")
    print(f"series-overlap: {overlapping} of {len(commits)} patches change lines that an earlier patch added, "
          f"{unsaid} of them without saying in their message that they extend them")
    return 1 if unsaid else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

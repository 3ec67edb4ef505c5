#!/usr/bin/env python3
"""Judge the warnings of a kernel build log by whose line they are on.

    build_warnings.py LOG TREE [BASE]

A warning (or error) whose location is a line that the series added (git diff
BASE..HEAD of TREE, default BASE "base") is the series' own: it is printed
with its message and the script exits 1. Warnings on the kernel's own lines
(e.g. 6.12.69's rust/kernel/lib.rs with a newer rustc) are listed, one line
each, and do not count. A warning with no location at all cannot be judged
and counts as the series' (the safe side).

Locations are read in the two forms the build prints: Clang's
"path:line:col: warning: ..." and rustc's "warning: ..." followed by
"--> path:line:col". A warning about the crate attributes that the kernel's
Makefile.build injects (-Zcrate-attr, "--> <crate attribute>:1:N") is the
kernel's own.
"""
import re
import subprocess
import sys

CLANG = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):\d+: (?P<kind>warning|error): (?P<msg>.*)")
RUSTC = re.compile(r"^(?P<kind>warning|error)(\[\w+\])?: (?P<msg>.*)")
ARROW = re.compile(r"^\s*--> (?P<path>[^:]+):(?P<line>\d+):\d+\s*$")
SUMMARY = re.compile(r"^(warning|error): (\d+ warnings? emitted|aborting due to)")


def added_lines(tree, base):
    """{path: set(line numbers)} of the lines HEAD adds over base."""
    out = subprocess.run(["git", "-C", tree, "diff", "-U0", "--no-color", base, "HEAD"],
                         check=True, capture_output=True, text=True).stdout
    added, path = {}, None
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
            start, count = int(m.group(1)), int(m.group(2) or 1)
            added.setdefault(path, set()).update(range(start, start + count))
    return added


def relpath(path, tree):
    for prefix in (tree.rstrip("/") + "/", "./"):
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path


def warnings(log):
    """(kind, message, path or None, line or None, text) for each warning."""
    lines = open(log, errors="replace").read().splitlines()
    i = 0
    while i < len(lines):
        m = CLANG.match(lines[i])
        if m:
            yield m["kind"], m["msg"], m["path"], int(m["line"]), lines[i]
        elif RUSTC.match(lines[i]) and not SUMMARY.match(lines[i]):
            m = RUSTC.match(lines[i])
            where = None
            for j in range(i + 1, min(i + 4, len(lines))):
                where = ARROW.match(lines[j])
                if where:
                    break
            text = "\n".join(lines[i:i + 12])
            if where:
                yield m["kind"], m["msg"], where["path"], int(where["line"]), text
            else:
                yield m["kind"], m["msg"], None, None, lines[i]
        i += 1


def main():
    log, tree = sys.argv[1], sys.argv[2]
    base = sys.argv[3] if len(sys.argv) > 3 else "base"
    added = added_lines(tree, base)
    ours, others = [], set()
    for kind, msg, path, line, text in warnings(log):
        if path is None:
            ours.append(text)
            continue
        path = relpath(path, tree)
        if path == "<crate attribute>":
            # -Zcrate-attr from the kernel's own Makefile.build
            # (rust_allowed_features), not a line of any file.
            others.add(f"{path} (the kernel's rust_allowed_features): {kind}: {msg}")
        elif line in added.get(path, ()):
            ours.append(text)
        else:
            others.add(f"{path}:{line}: {kind}: {msg}")
    for o in sorted(others):
        print(f"outside the series (the kernel's own line): {o}", file=sys.stderr)
    for t in ours:
        print(t, file=sys.stderr)
    if ours:
        print(f"{len(ours)} warning(s) on lines of the series (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

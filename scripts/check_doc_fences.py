#!/usr/bin/env python3
"""Checks that every Markdown file under docs/ (and the top-level *.md) pairs
its code fences: a stray fence turns every later section inside out, code
rendered as text and text as code. Each fence line
must alternate opening (may carry a language) and closing (bare), and the
file must end outside a fence. Usage: check_doc_fences.py REPO_ROOT.
Prints FILE:LINE of each problem and exits 1 if there is one."""
import pathlib
import re
import sys

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fence_problem(path):
    """(line, what) of the first misplaced fence, or None."""
    opened = None  # line of the open fence
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if not m:
            continue
        if opened is None:
            opened = n
        elif line.strip() == m.group(1):
            opened = None
        else:
            return n, ("fence with an info string inside the code block "
                       f"opened on line {opened} (a missing closing fence?)")
    if opened is not None:
        return opened, "code fence opened here is never closed"
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted(root.glob("docs/**/*.md")) + sorted(root.glob("*.md"))
    bad = 0
    for f in files:
        problem = fence_problem(f)
        if problem is not None:
            print(f"{f}:{problem[0]}: {problem[1]}")
            bad += 1
    print(f"{len(files)} Markdown files checked, {bad} with misplaced fences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The repository stands on its own: no tracked file refers to documents that do not ship with it.

Fails for every tracked file (git ls-files; without git, every file outside .git and .build)
that mentions the project's internal design notes, style guide, research notes or seed
documents — a path into a sibling `shared` folder, a design-document section or file name, the
style guide's file name, a research note or a numbered seed. Contracts belong in
docs/reference/, figures in docs/performance.md, history in git.

Binary files are skipped. Prints one line per failure (with the first matching line of the file), then
"N passed, N failed"; exits 1 on any failure. Usage: python3 scripts/check_standalone.py [-v]
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERBOSE = "-v" in sys.argv[1:]

# Written in pieces so that this file does not match itself.
_D, _S, _R = "DESIGN", "STYLE", "research"
PATTERNS = [
    re.escape("../" + "shared"),
    _D + r"\s*§",
    re.escape(_D + ".md"),
    re.escape(_S + ".md"),
    re.escape("shared/" + _R),
    _R + r"/(providers|libcurl-floor)\.md",
    r"\bseeds?\s+(///\s*)?0\d\d",
]
REFERENCE = re.compile("|".join(PATTERNS))


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in ROOT.rglob("*") if p.is_file() and not {".git", ".build"} & set(p.relative_to(ROOT).parts)]


def main() -> int:
    passed = failed = 0
    for path in sorted(tracked_files()):
        relative = path.relative_to(ROOT).as_posix()
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        match = REFERENCE.search(text)
        if match is None:
            passed += 1
            if VERBOSE:
                print(f"ok   {relative}")
            continue
        failed += 1
        number = text.count("\n", 0, match.start()) + 1
        line = text.splitlines()[number - 1].strip()
        print(f"FAIL {relative}:{number}: refers to a document that does not ship with the repository: {line[:160]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

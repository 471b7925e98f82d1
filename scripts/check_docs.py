#!/usr/bin/env python3
"""The reference documents what the code does.

- every `PUSHWORKER_*` variable read in Sources/PushRuntime/Configuration/ and every `EVENT_*`
  variable of the tracking endpoint (Sources/PushEvents/EventsProcess.swift) has a row in
  docs/reference/configuration.md, and every variable there exists in the code;
- every metric family the code registers (a `"pushworker_…"` name in Sources/) has a row in
  docs/reference/metrics.md with its type and labels as Metrics.catalogue declares them, and
  every metric there exists in the code;
- every relative link in the Markdown files of the repository (README, CHANGELOG, docs/,
  examples/, charts/, Tests/Fixtures/) points at a file that exists, and a `#anchor` into a
  Markdown file at one of its headings.

Prints one line per failure, then "N passed, N failed"; exits 1 on any failure.
Usage: python3 scripts/check_docs.py [-v]
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERBOSE = "-v" in sys.argv[1:]
passed = failed = 0


def check(label: str, condition: bool, why: str = "") -> None:
    global passed, failed
    if condition:
        passed += 1
        if VERBOSE:
            print(f"ok   {label}")
    else:
        failed += 1
        print(f"FAIL {label}: {why}")


def table_names(text: str, pattern: str) -> set[str]:
    """Names in the first cell of table rows: | `NAME` | …"""
    return set(re.findall(r"^\| `(" + pattern + r")` \|", text, re.MULTILINE))


def check_configuration() -> None:
    doc = (ROOT / "docs/reference/configuration.md").read_text()
    code: set[str] = set()
    for path in (ROOT / "Sources/PushRuntime/Configuration").glob("*.swift"):
        code |= {n for n in re.findall(r'"(PUSHWORKER_[A-Z0-9_<>]+)', path.read_text()) if not n.endswith("_")}
    events = (ROOT / "Sources/PushEvents/EventsProcess.swift").read_text()
    code |= set(re.findall(r'"(EVENT_[A-Z0-9_]+)"', events))
    documented = table_names(doc, r"(?:PUSHWORKER|EVENT)_[A-Z0-9_<>]+")
    for name in sorted(code):
        check(f"{name} documented in docs/reference/configuration.md", name in documented, "no `| `NAME` |` row")
    for name in sorted(documented - code):
        check(f"{name} in docs/reference/configuration.md is read by the code", False, "no such variable in the code")


def catalogue() -> dict[str, tuple[str, list[str]]]:
    text = (ROOT / "Sources/PushRuntime/Observability/Metrics.swift").read_text()
    out = {}
    for name, kind, labels in re.findall(r'"((?:pushworker|process)_[a-z0-9_]+)": \("(\w+)", "(?:[^"\\]|\\.)*", \[([^\]]*)\]\)', text):
        out[name] = (kind, [label.strip().strip('"') for label in labels.split(",") if label.strip()])
    return out


def check_metrics() -> None:
    doc = (ROOT / "docs/reference/metrics.md").read_text()
    registered: set[str] = set()
    for path in (ROOT / "Sources").rglob("*.swift"):
        registered |= set(re.findall(r'"((?:pushworker|process)_[a-z0-9_]+)"', path.read_text(errors="replace")))
    declared = catalogue()
    rows = {m.group(1): m for m in re.finditer(r"^\| `((?:pushworker|process)_[a-z0-9_]+)` \| (\w+) \| ([^|]*)\|", doc, re.MULTILINE)}
    for name in sorted(registered | set(declared)):
        row = rows.get(name)
        check(f"{name} documented in docs/reference/metrics.md", row is not None, "no `| `name` | type | labels |` row")
        if row is None:
            continue
        check(f"{name} is in Metrics.catalogue", name in declared, "registered in Sources/ but not catalogued (no HELP/TYPE)")
        if name in declared:
            kind, labels = declared[name]
            got = [label.strip() for label in row.group(3).split(",") if label.strip()]
            check(f"{name} type and labels as catalogued", row.group(2) == kind and got == labels,
                  f"docs: {row.group(2)} {got}, code: {kind} {labels}")
    for name in sorted(set(rows) - registered - set(declared)):
        check(f"{name} in docs/reference/metrics.md exists in the code", False, "no such metric in Sources/")


def anchors(markdown: str) -> set[str]:
    out: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"^#{1,6} (.*)", line)
        if in_code or not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check_links() -> None:
    try:
        names = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if ".build" not in p.parts]
    for name in sorted(names):
        path = ROOT / name
        if not path.exists():
            continue
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target) or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            ok = resolved.exists()
            why = f"{file_part} does not exist"
            if ok and anchor and resolved.suffix == ".md":
                ok = anchor in anchors(resolved.read_text())
                why = f"no heading #{anchor} in {resolved.relative_to(ROOT)}"
            check(f"{name}: link {target}", ok, why)
        # Prose references in the form docs/FILE.md "Heading" name (a part of) a heading that exists.
        for file_part, heading in re.findall(r"(docs/[\w./-]+\.md) \"([^\"]+)\"", text):
            resolved = ROOT / file_part
            titles = set()
            if resolved.exists():
                titles = {re.sub(r"^#{1,6} ", "", line).strip().replace("`", "")
                          for line in re.sub(r"```.*?```", "", resolved.read_text(), flags=re.DOTALL).splitlines()
                          if re.match(r"^#{1,6} ", line)}
            check(f"{name}: {file_part} \"{heading}\"", any(heading.replace("`", "") in title for title in titles),
                  f"no heading \"{heading}\" in {file_part}")


def main() -> int:
    check_configuration()
    check_metrics()
    check_links()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

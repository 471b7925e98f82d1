#!/usr/bin/env python3
"""The parameter table of charts/pushworker/README.md, generated from values.yaml.

A value is documented by the comment block right above its key when the block starts with
`# --` (the helm-docs convention): the block, without its `#`, is the description. Each
documented key becomes a row `| key | type | default | description |`; a documented map is one
row, and its children get rows of their own too when some of them are documented; an
undocumented map is walked into; an undocumented leaf gets a row with an empty description. Defaults are
the values.yaml values in JSON, long ones cut with a pointer to values.yaml.

The table sits between `<!-- parameters:begin -->` and `<!-- parameters:end -->`; the rest of
the README is written by hand.

  python3 scripts/chart_readme.py           # check: exit 1 when README.md is not up to date
  python3 scripts/chart_readme.py --write   # regenerate the table
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "pushworker"
VALUES = CHART / "values.yaml"
README = CHART / "README.md"
BEGIN, END = "<!-- parameters:begin -->", "<!-- parameters:end -->"
MAX_DEFAULT = 80


def comments() -> dict[str, str]:
    """Key path → description, for every key whose comment block starts with `# --`."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    block: list[str] = []
    for raw in VALUES.read_text().splitlines():
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped:
            block = []
            continue
        if stripped.startswith("#"):
            block.append(stripped)
            continue
        match = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(\s|$)", line)
        if not match:  # a list item or a continuation line
            block = []
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        path = ".".join(key for _, key in stack)
        if block and block[0].startswith("# --"):
            text = [block[0][4:].strip()] + [b[1:].strip() for b in block[1:]]
            out[path] = " ".join(t for t in text if t)
        block = []
    return out


def type_of(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "null"


def default_of(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(text) > MAX_DEFAULT:
        return "see values.yaml"
    return f"`{text}`"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def rows() -> list[str]:
    docs = comments()
    values = yaml.safe_load(VALUES.read_text())
    out: list[str] = []

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            documented = path in docs
            has_documented_children = any(p.startswith(path + ".") for p in docs)
            if isinstance(value, dict) and value and not documented:
                walk(value, path + ".")
                continue
            out.append(f"| `{path}` | {type_of(value)} | {cell(default_of(value))} | {cell(docs.get(path, ''))} |")
            if isinstance(value, dict) and has_documented_children:
                walk(value, path + ".")

    walk(values, "")
    return out


def table() -> str:
    return "\n".join(["| key | type | default | description |", "|---|---|---|---|", *rows()])


def main() -> int:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        print(f"{README.relative_to(ROOT)}: the markers {BEGIN} and {END} are missing")
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    generated = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if "--write" in sys.argv[1:]:
        README.write_text(generated)
        print(f"{README.relative_to(ROOT)}: parameter table written ({len(rows())} rows)")
        return 0
    if generated != text:
        print(f"FAIL {README.relative_to(ROOT)}: the parameter table does not match values.yaml: run python3 scripts/chart_readme.py --write")
        return 1
    print(f"{README.relative_to(ROOT)}: the parameter table matches values.yaml ({len(rows())} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

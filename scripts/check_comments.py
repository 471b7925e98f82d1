#!/usr/bin/env python3
"""Comments state contracts and invariants, not measurement history.

Scans the comments of the tracked sources (`//`, `///` and `/* */` in Sources/ and Tests/ .swift,
.c and .h files, and Package.swift; string literals are not comments) and fails on:

- the word "callgrind" outside Sources/PushDevTools and Sources/pushworker-dev (whose benchmark
  options name the profiler they run under);
- a numbered session ("sixth session", "14th session");
- a profile share: "of the … samples", or "N % of the/a/an …" (a share of the results, the
  window a benchmark or a drill works in, is a contract and passes);
- an instruction count ("≈ 1.3k instructions", "8 more instructions");
- `docs/performance.md "X"` where X is not a heading of docs/performance.md.

Figures live in docs/performance.md, history in git. A comment's consecutive lines are read as one
text, so a phrase broken over two lines is found. Before the scan, planted offenders must fail and
legitimate comments must pass (the check's own test).

Prints one line per failure, then "N passed, N failed"; exits 1 on any failure.
Usage: python3 scripts/check_comments.py [-v]
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERBOSE = "-v" in sys.argv[1:]
PERFORMANCE = ROOT / "docs" / "performance.md"
SUFFIXES = (".swift", ".c", ".h")
# Where benchmark options may name the profiler they run the worker under.
CALLGRIND_ALLOWED = ("Sources/PushDevTools/", "Sources/pushworker-dev/")

ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
SESSION = re.compile(r"\b(?:" + "|".join(ORDINALS) + r"|\d+(?:st|nd|rd|th))\s+session\b", re.IGNORECASE)
CALLGRIND = re.compile(r"\bcallgrind\b", re.IGNORECASE)
SAMPLES = re.compile(r"\bof\s+(?:the|an?)\s+[\w'’ -]{0,40}?\bsamples\b", re.IGNORECASE)
SHARE = re.compile(r"\d\s?%\s+of\s+(?:the|an?)\s+(?!results\b)", re.IGNORECASE)
INSTRUCTIONS = re.compile(r"\d[\d.,]*\s?k?\s+(?:more\s+|fewer\s+)?instructions\b", re.IGNORECASE)
SECTION = re.compile(r'docs/performance\.md,?\s*"([^"]+)"')


def headings(markdown: str) -> set[str]:
    """The Markdown headings of `markdown` (outside fenced code), as written and without backticks."""
    found: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            found.update({match.group(1), match.group(1).replace("`", "")})
    return found


def comments(source: str, swift: bool) -> list[tuple[int, str]]:
    """(line, text) of every comment line of `source`, markers (`//`, `///`, `/*`, `*`, `*/`) removed."""
    out: list[tuple[int, str]] = []
    line, i, n = 1, 0, len(source)
    current: list[str] = []

    def flush_line() -> None:
        if current:
            out.append((line, "".join(current)))
            current.clear()

    state = "code"  # code | line | block | string | multiline | raw | char
    raw_end = ""
    while i < n:
        c = source[i]
        if c == "\n":
            if state == "line":
                state = "code"
            flush_line()
            line += 1
            i += 1
            continue
        if state == "code":
            if source.startswith("//", i):
                state = "line"
                i += 2
                while i < n and source[i] == "/":
                    i += 1
                continue
            if source.startswith("/*", i):
                state = "block"
                i += 2
                continue
            if swift and source.startswith('"""', i):
                state, i = "multiline", i + 3
                continue
            if swift and c == "#":
                hashes = re.match(r'#+"', source[i:])
                if hashes:
                    count = len(hashes.group(0)) - 1
                    state, raw_end, i = "raw", '"' + "#" * count, i + count + 1
                    continue
            if c == '"':
                state = "string"
            elif c == "'" and not swift:
                state = "char"
            i += 1
            continue
        if state == "line":
            current.append(c)
            i += 1
            continue
        if state == "block":
            if source.startswith("*/", i):
                state, i = "code", i + 2
                continue
            if c == "*" and not "".join(current).strip():
                i += 1  # a continuation line's leading `*`
                continue
            current.append(c)
            i += 1
            continue
        if state == "multiline":
            if c == "\\":
                i += 2
                continue
            if source.startswith('"""', i):
                state, i = "code", i + 3
                continue
            i += 1
            continue
        if state == "raw":
            if source.startswith(raw_end, i):
                state, i = "code", i + len(raw_end)
                continue
            i += 1
            continue
        # string or char
        if c == "\\":
            i += 2
            continue
        if (state == "string" and c == '"') or (state == "char" and c == "'"):
            state = "code"
        i += 1
    flush_line()
    return out


def blocks(lines: list[tuple[int, str]]) -> list[tuple[str, list[tuple[int, int]]]]:
    """Consecutive comment lines joined with spaces, each with (offset, line) starts to map a match back."""
    result: list[tuple[str, list[tuple[int, int]]]] = []
    text, starts, previous = "", [], -2
    for number, comment in lines:
        piece = comment.strip()
        if number != previous + 1 and starts:
            result.append((text, starts))
            text, starts = "", []
        if text:
            text += " "
        starts.append((len(text), number))
        text += piece
        previous = number
    if starts:
        result.append((text, starts))
    return result


def problems(relative: str, source: str, sections: set[str]) -> list[tuple[int, str, str]]:
    """(line, why, text) of every offending comment in `source`, a file at `relative`."""
    found: list[tuple[int, str, str]] = []
    rules = [(SESSION, "cites a numbered session"),
             (SAMPLES, "cites a profile's samples"),
             (SHARE, "cites a measured share"),
             (INSTRUCTIONS, "cites an instruction count")]
    if not relative.startswith(CALLGRIND_ALLOWED):
        rules.append((CALLGRIND, "cites callgrind"))
    for text, starts in blocks(comments(source, relative.endswith(".swift"))):
        def line_of(offset: int) -> int:
            return max(number for start, number in starts if start <= offset)
        for pattern, why in rules:
            for match in pattern.finditer(text):
                found.append((line_of(match.start()), why, text[max(0, match.start() - 60):match.end() + 40]))
        for match in SECTION.finditer(text):
            name = " ".join(match.group(1).split())
            if name not in sections and name.replace("`", "") not in sections:
                found.append((line_of(match.start()), f'points at docs/performance.md "{name}", not one of its headings',
                              match.group(0)))
    return sorted(found)


# The check's own test: each planted comment must fail, each legitimate one must pass.
MUST_FAIL: list[tuple[str, str]] = [
    ("Sources/PushHTTP/Planted.swift", "/// libc's `memchr` beats a word loop (callgrind, sixth session).\nlet a = 1\n"),
    ("Sources/PushHTTP/Planted.swift", "let a = 1 // measured: 14th session\n"),
    ("Sources/PushWorker/Planted.swift", "/// A class: a struct's copy retained its strings (8 % of the\n/// finisher's samples).\n"),
    ("Sources/PushWorker/Planted.swift", "/// (≈ 2 % of the consumer's samples in mixed runs)\n"),
    ("Sources/PushCrypto/Planted.swift", "/// skips `EVP_DigestSignInit` (≈15 % of an ES256 signature).\n"),
    ("Sources/PushCore/Planted.swift", "    // a `var` plan was copied whole (≈ 1.3k instructions per recipient).\n"),
    ("Sources/PushCore/Planted.swift", "// counted with callgrind\n"),
    ("Sources/PushCore/Planted.swift", '/// (docs/performance.md "Seventh\n/// session")\n'),
    ("Sources/PushCore/Planted.swift", '/// (docs/performance.md "Instruction counts of the whole worker")\n'),
    ("Sources/CPushPlanted/planted.c", "/* the EVP route costs ~40 % of the\n * signature; fifth session */\nint x;\n"),
    ("Sources/CPushPlanted/planted.h", "int x; /* counted by callgrind */\n"),
    ("Tests/PushCoreTests/PlantedTests.swift", "// The parser before the fourteenth session.\n"),
]
MUST_PASS: list[tuple[str, str]] = [
    ("Sources/PushHTTP/Planted.swift", "/// Resumed TLS sessions keep the client's identity; the nghttp2 session is deleted.\n"),
    ("Sources/PushKafka/Planted.swift", "/// consumers need `session.timeout.ms` >= 3000 (session timeout, fenced).\n"),
    ("Sources/PushDevTools/Bench/Planted.swift", "/// e.g. `/usr/bin/valgrind --tool=callgrind` (docs/performance.md \"Profiling a\n/// running worker\").\n"),
    ("Sources/pushworker-dev/Planted.swift", "// under valgrind --tool=callgrind\n"),
    ("Sources/PushDevTools/Bench/Planted.swift", "// CPU between the samples where 10 % and 90 % of the results were in\n"),
    ("Sources/PushChaos/Planted.swift", "/// at 40 % of the results Redis is replaced by an empty one\n"),
    ("Sources/PushCore/Planted.swift", '/// (docs/performance.md "The allocator"; docs/performance.md "`bench http`, `bench-peers`")\n'),
    ("Sources/PushCore/Planted.swift", 'let text = "callgrind, sixth session, 8 % of the samples" // a string, not a comment\n'),
    ("Sources/PushCore/Planted.swift", 'let help = """\n    // callgrind, sixth session\n    """\nlet url = "http://host" // fine\n'),
    ("Sources/PushCore/Planted.swift", 'let raw = #"a " // callgrind, sixth session"#\n'),
    ("Sources/CPushPlanted/planted.c", 'const char *s = "/* callgrind */"; /* the \'"\' byte */\n'),
]


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", "Sources", "Tests", "Package.swift"], cwd=ROOT,
                             capture_output=True, check=True).stdout
        names = [name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        names = [p.relative_to(ROOT).as_posix() for top in ("Sources", "Tests") for p in (ROOT / top).rglob("*")]
        names.append("Package.swift")
    return sorted(name for name in names if name.endswith(SUFFIXES))


def main() -> int:
    passed = failed = 0
    sections = headings(PERFORMANCE.read_text(encoding="utf-8"))
    if not sections:
        print("FAIL docs/performance.md: no headings found")
        return 1
    for index, (relative, source) in enumerate(MUST_FAIL):
        if problems(relative, source, sections):
            passed += 1
            if VERBOSE:
                print(f"ok   [must fail {index}] {relative}")
        else:
            failed += 1
            print(f"FAIL [must fail {index}] {relative}: the planted comment passed: {source!r}")
    for index, (relative, source) in enumerate(MUST_PASS):
        found = problems(relative, source, sections)
        if not found:
            passed += 1
            if VERBOSE:
                print(f"ok   [must pass {index}] {relative}")
        else:
            failed += 1
            print(f"FAIL [must pass {index}] {relative}: a legitimate comment failed ({found[0][1]}): {source!r}")
    for relative in tracked_files():
        path = ROOT / relative
        if not path.is_file():
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found = problems(relative, source, sections)
        if not found:
            passed += 1
            if VERBOSE:
                print(f"ok   {relative}")
            continue
        failed += 1
        for number, why, text in found:
            print(f"FAIL {relative}:{number}: {why} (figures belong in docs/performance.md, history in git): {text[:160]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

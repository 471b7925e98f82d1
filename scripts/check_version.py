#!/usr/bin/env python3
"""One version: the VERSION file is the release, and everything that names one agrees with it.

- VERSION holds one semantic version (MAJOR.MINOR.PATCH, optional -pre/+build) on one line;
- charts/pushworker/Chart.yaml `version` and `appVersion` are that version, and the default
  image tag (values.yaml `image.tag` empty) is therefore that version too;
- CHANGELOG.md's first release heading (`## [X.Y.Z]`) is that version (an `## [Unreleased]`
  section, Keep a Changelog's, may come before it);
- a built binary, when there is one (.build/debug/pushworker, .build/release/pushworker),
  reports it (`pushworker version --json`); the Swift tests check BuildInfo.version as well.

The binary reads VERSION when it is compiled (Sources/CPushBuildInfo/build_info.c), so a
release is cut by editing VERSION, CHANGELOG.md and the chart together. Prints one line per
failure, then "N passed, N failed"; exit 1 on any failure. Usage: python3 scripts/check_version.py [-v]
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
VERBOSE = "-v" in sys.argv[1:]
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
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


def main() -> int:
    lines = (ROOT / "VERSION").read_text().splitlines()
    version = lines[0].strip() if lines else ""
    check("VERSION is one semantic version on one line", bool(SEMVER.match(version)) and len([l for l in lines if l.strip()]) == 1,
          f"{lines!r}")
    chart = yaml.safe_load((ROOT / "charts/pushworker/Chart.yaml").read_text())
    check(f"Chart.yaml version is {version}", str(chart.get("version")) == version, f"version: {chart.get('version')}")
    check(f"Chart.yaml appVersion is {version}", str(chart.get("appVersion")) == version, f"appVersion: {chart.get('appVersion')}")
    values = yaml.safe_load((ROOT / "charts/pushworker/values.yaml").read_text())
    check("values.yaml image.tag is empty (the image tag is the chart's appVersion)", values["image"].get("tag") in ("", None),
          f"image.tag: {values['image'].get('tag')!r}")
    changelog = (ROOT / "CHANGELOG.md").read_text() if (ROOT / "CHANGELOG.md").exists() else ""
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.MULTILINE)
    check("CHANGELOG.md's Unreleased section, if any, comes first", "Unreleased" not in headings[1:], str(headings[:3]))
    releases = [heading for heading in headings if heading != "Unreleased"]
    check(f"CHANGELOG.md's first release is {version}", bool(releases) and releases[0] == version, f"releases: {releases[:3]}")
    check("CHANGELOG.md names each release once", len(releases) == len(set(releases)), str(releases))
    for build in ("debug", "release"):
        binary = ROOT / ".build" / build / "pushworker"
        if not binary.exists():
            continue
        try:
            out = subprocess.run([str(binary), "version", "--json"], capture_output=True, text=True, timeout=30)
            reported = json.loads(out.stdout).get("version")
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            reported = f"unreadable: {e}"
        check(f".build/{build}/pushworker reports {version}", reported == version,
              f"it reports {reported!r}: rebuild it (make build)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

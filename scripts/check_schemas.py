#!/usr/bin/env python3
"""Validate the message JSON Schemas and the topic files (docs/reference/topics.md, job.md, records.md).

- every schema in topics/schemas/ is a valid draft 2020-12 schema;
- every fixture in Tests/Fixtures/<kind>/valid/*.json passes <kind>.v1.schema.json and every
  one in Tests/Fixtures/<kind>/invalid/*.json fails it;
- every topics/*.json has the contract fields with sane values, the six topics of docs/reference/topics.md
  exist, push.tokens.v1 is compacted, and a referenced valueSchema exists.

Needs the `jsonschema` PyPI package (scripts/requirements-ci.txt). Prints one line per
failure, then "N passed, N failed"; exits 1 on any failure.

Usage: python3 scripts/check_schemas.py [-v]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover
    print("check_schemas: the jsonschema package is missing: pip install -r scripts/requirements-ci.txt",
          file=sys.stderr)
    sys.exit(2)

ROOT = Path(__file__).resolve().parent.parent
TOPICS = ROOT / "topics"
SCHEMAS = TOPICS / "schemas"
FIXTURES = ROOT / "Tests" / "Fixtures"
KINDS = ("job", "result", "token", "event")
EXPECTED_TOPICS = {
    "push.jobs.v1": "jobId",
    "push.jobs.transactional.v1": "jobId",
    "push.retry.v1": "jobId",
    "push.results.v1": "subscriptionId",
    "push.tokens.v1": "subscriptionId",
    "push.dlq.v1": "original key",
    "push.events.v1": "msgId",
}
TOPIC_FIELDS = {"name": str, "partitions": int, "replicationFactor": int, "config": dict,
                "key": str, "value": str, "purpose": str}

VERBOSE = "-v" in sys.argv[1:]
passed = 0
failed = 0


def ok(label: str) -> None:
    global passed
    passed += 1
    if VERBOSE:
        print(f"ok   {label}")


def fail(label: str, why: str) -> None:
    global failed
    failed += 1
    print(f"FAIL {label}: {why}")


def load_json(path: Path):
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def check_fixtures() -> None:
    for kind in KINDS:
        schema_path = SCHEMAS / f"{kind}.v1.schema.json"
        label = f"schema {schema_path.relative_to(ROOT)}"
        try:
            schema = load_json(schema_path)
            Draft202012Validator.check_schema(schema)
        except (OSError, ValueError, jsonschema.SchemaError) as e:
            fail(label, str(e).splitlines()[0])
            continue
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            fail(label, "$schema is not draft 2020-12")
            continue
        ok(label)
        validator = Draft202012Validator(schema)
        for expect_valid in (True, False):
            folder = FIXTURES / kind / ("valid" if expect_valid else "invalid")
            files = sorted(folder.glob("*.json"))
            if not files:
                fail(f"fixtures {folder.relative_to(ROOT)}", "no fixtures")
            for path in files:
                label = f"{path.relative_to(ROOT)}"
                try:
                    doc = load_json(path)
                except ValueError as e:
                    fail(label, f"not JSON: {e}")
                    continue
                errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
                if expect_valid and errors:
                    where = "/".join(str(p) for p in errors[0].path) or "(root)"
                    fail(label, f"expected valid, got: {where}: {errors[0].message[:160]}")
                elif not expect_valid and not errors:
                    fail(label, "expected invalid, but it validates")
                else:
                    ok(label)


def check_topics() -> None:
    seen: dict[str, Path] = {}
    for path in sorted(TOPICS.glob("*.json")):
        label = f"{path.relative_to(ROOT)}"
        try:
            topic = load_json(path)
        except ValueError as e:
            fail(label, f"not JSON: {e}")
            continue
        problems = []
        for field, typ in TOPIC_FIELDS.items():
            value = topic.get(field)
            if not isinstance(value, typ) or isinstance(value, bool):
                problems.append(f"{field} missing or not {typ.__name__}")
        name = topic.get("name")
        if isinstance(name, str):
            if path.name != f"{name}.json":
                problems.append(f"file name should be {name}.json")
            seen[name] = path
            expected_key = EXPECTED_TOPICS.get(name)
            if expected_key is None:
                problems.append("not a declared topic (docs/reference/topics.md)")
            elif topic.get("key") != expected_key:
                problems.append(f"key should be {expected_key!r}")
        if isinstance(topic.get("partitions"), int) and topic["partitions"] < 1:
            problems.append("partitions < 1")
        if isinstance(topic.get("replicationFactor"), int) and topic["replicationFactor"] < 1:
            problems.append("replicationFactor < 1")
        config = topic.get("config")
        if isinstance(config, dict):
            for key in ("retention.ms", "cleanup.policy"):
                if key not in config:
                    problems.append(f"config.{key} missing")
            for key, value in config.items():
                if not isinstance(value, str):
                    problems.append(f"config.{key} must be a string (Kafka Admin API configs are strings)")
            policy = config.get("cleanup.policy")
            if policy not in ("delete", "compact", "compact,delete", "delete,compact"):
                problems.append(f"config.cleanup.policy {policy!r} unknown")
            if name == "push.tokens.v1" and policy != "compact":
                problems.append("push.tokens.v1 must be compacted")
            retention = config.get("retention.ms")
            if isinstance(retention, str) and not retention.lstrip("-").isdigit():
                problems.append("config.retention.ms not an integer string")
            min_isr = config.get("min.insync.replicas")
            rf = topic.get("replicationFactor")
            if isinstance(min_isr, str) and isinstance(rf, int) and min_isr.isdigit() and int(min_isr) > rf:
                problems.append("min.insync.replicas > replicationFactor")
        value_schema = topic.get("valueSchema")
        if value_schema is not None and not (TOPICS / value_schema).is_file():
            problems.append(f"valueSchema {value_schema} does not exist")
        if problems:
            fail(label, "; ".join(problems))
        else:
            ok(label)
    for name in EXPECTED_TOPICS:
        if name not in seen:
            fail(f"topics/{name}.json", "missing")


def main() -> int:
    check_fixtures()
    check_topics()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

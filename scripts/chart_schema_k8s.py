#!/usr/bin/env python3
"""The Kubernetes definitions embedded in charts/pushworker/values.schema.json.

Values such as `affinity`, `tolerations`, `extraVolumes`, `initContainers` or
`networkPolicy.kafka.to` are Kubernetes objects passed through to the manifests. So that the
chart's schema rejects an unknown key at every level of them too (`affinity.nodeAfinity`), the
schema carries the strict Kubernetes JSON Schemas of those types (unknown fields refused) under
`definitions`, taken from the `kubernetes-validate` package for the chart's kubeVersion floor
(1.27) with their descriptions dropped, and refers to them with `$ref`. Helm validates values
offline: nothing is fetched.

  python3 scripts/chart_schema_k8s.py           # check: exit 1 when the embedded copy differs
  python3 scripts/chart_schema_k8s.py --write   # refresh it (after adding a root type below)

scripts/check_chart.py runs the check.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import kubernetes_validate

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "charts" / "pushworker" / "values.schema.json"
KUBE_VERSION = "1.27.0"
# The types values.schema.json refers to; their dependencies come along.
ROOTS = [
    "io.k8s.api.core.v1.Affinity",
    "io.k8s.api.core.v1.Container",
    "io.k8s.api.core.v1.EnvVar",
    "io.k8s.api.core.v1.KeyToPath",
    "io.k8s.api.core.v1.PodSecurityContext",
    "io.k8s.api.core.v1.ResourceRequirements",
    "io.k8s.api.core.v1.SecurityContext",
    "io.k8s.api.core.v1.Toleration",
    "io.k8s.api.core.v1.TopologySpreadConstraint",
    "io.k8s.api.core.v1.Volume",
    "io.k8s.api.core.v1.VolumeMount",
    "io.k8s.api.networking.v1.IngressTLS",
    "io.k8s.api.networking.v1.NetworkPolicyPeer",
]
PREFIX = "io.k8s."


def kubernetes_definitions() -> dict:
    path = Path(os.path.dirname(kubernetes_validate.__file__)) / "kubernetes-json-schema" / f"v{KUBE_VERSION}-local-strict" / "_definitions.json"
    return json.loads(path.read_text())["$defs"]


def lean(node):
    """Without descriptions and x-kubernetes-* annotations; `$ref`s into `definitions`."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "description" or key.startswith("x-kubernetes"):
                continue
            if key == "$ref":
                value = "#/definitions/" + value.rsplit("/", 1)[-1]
            out[key] = lean(value)
        return out
    if isinstance(node, list):
        return [lean(item) for item in node]
    return node


def closure() -> dict:
    defs = kubernetes_definitions()
    out: dict = {}
    stack = list(ROOTS)
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out[name] = lean(defs[name])
        stack.extend(refs(defs[name]))
    return dict(sorted(out.items()))


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value.rsplit("/", 1)[-1]
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def embedded(schema: dict) -> dict:
    return {k: v for k, v in schema.get("definitions", {}).items() if k.startswith(PREFIX)}


def main() -> int:
    schema = json.loads(SCHEMA.read_text())
    wanted = closure()
    if "--write" in sys.argv[1:]:
        own = {k: v for k, v in schema.get("definitions", {}).items() if not k.startswith(PREFIX)}
        schema["definitions"] = {**own, **wanted}
        SCHEMA.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
        print(f"{SCHEMA.relative_to(ROOT)}: {len(wanted)} Kubernetes definitions written")
        return 0
    if embedded(schema) != wanted:
        print(f"{SCHEMA.relative_to(ROOT)}: the embedded Kubernetes definitions differ: run python3 scripts/chart_schema_k8s.py --write")
        return 1
    print(f"{SCHEMA.relative_to(ROOT)}: {len(wanted)} Kubernetes definitions current")
    return 0


if __name__ == "__main__":
    sys.exit(main())

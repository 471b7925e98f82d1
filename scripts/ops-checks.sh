#!/usr/bin/env bash
# Non-Swift checks run by `make test`: nothing refers to documents outside the repository,
# comments state contracts rather than measurement history (check_comments.py), the
# reference documents every variable and metric, topic files and JSON Schemas against fixtures,
# the Helm chart rendered and validated (and its README current), one version everywhere, the
# image's runtime libraries, no development code in the production executable.
# Python tools live in a venv under .build so nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/ops-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ -f scripts/requirements-ci.txt ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/requirements-ci.txt
fi
status=0
for check in scripts/check_standalone.py scripts/check_comments.py scripts/check_docs.py scripts/check_schemas.py scripts/check_chart.py scripts/chart_readme.py scripts/check_version.py; do
  if [ -f "$check" ]; then
    echo "== $check"
    "$venv/bin/python" "$check" || status=1
  fi
done
if [ -f scripts/check_image_libs.sh ] && [ -x .build/debug/pushworker ]; then
  echo "== scripts/check_image_libs.sh"
  bash scripts/check_image_libs.sh .build/debug/pushworker || status=1
fi
if [ -f scripts/check_products.sh ]; then
  echo "== scripts/check_products.sh"
  bash scripts/check_products.sh .build/debug || status=1
fi
exit $status

#!/usr/bin/env bash
# The whole real-data regression on demand: every row of tests/regression (CI runs the fast rows),
# the engine sweep and the CLI edge cases, against the stock minimap2 2.31 oracle.
# usage: scripts/regression.sh [--backend cpu|cuda] [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--backend" ]; then export GPUEXT_TEST_BACKEND=$2; shift 2; fi
python3 scripts/upstream.py oracle minimap2 >/dev/null
GPUEXT_SLOW=1 python3 -m pytest -m "realdata or oracle" tests/regression tests/engine tests/cli "$@"

#!/usr/bin/env bash
# Install gpuext from this checkout, build the stock minimap2 oracle, and run the test suite.
# GPU tests skip without a GPU; the real data sets are fetched (and cached in data/cache/) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test]'
python3 scripts/upstream.py oracle minimap2 >/dev/null
python3 -m pytest "$@"

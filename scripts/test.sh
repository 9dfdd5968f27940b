#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (ctest). The README's test
# command and what CI runs (.ci/run). Extra arguments go to ctest, e.g. scripts/test.sh -R Server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build
ctest --test-dir build --output-on-failure --timeout 300 -j "${RLSCORE_JOBS:-2}" "$@"

#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (ctest), in both build
# configurations: with the CUDA module (when nvcc is there; the GPU tests skip without a device)
# and with CUDA disabled (the server must build, start and serve without it). The README's test
# command and what CI runs (.ci/run). Extra arguments go to ctest, e.g. scripts/test.sh -R Server.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${RLSCORE_JOBS:-2}
bash scripts/setup.sh --test-tools

bash scripts/build.sh build
ctest --test-dir build --output-on-failure --timeout 300 -j "$jobs" "$@"

echo "== again without CUDA (RLSCORE_WITH_CUDA=OFF) =="
bash scripts/build.sh build-nocuda -DRLSCORE_WITH_CUDA=OFF -DRLSCORE_BUILD_BENCH=OFF \
  -DRLSCORE_DEPLOY_TESTS=OFF
ctest --test-dir build-nocuda --output-on-failure --timeout 300 -j "$jobs" "$@"

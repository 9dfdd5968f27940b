#!/usr/bin/env bash
# Configures (once) and builds rlscore with Ninja.
# Usage: scripts/build.sh [--target TARGET] [BUILD_DIR] [cmake args...]
# BUILD_DIR defaults to build/; TARGET to everything (tests and benchmarks included). Runs scripts/setup.sh (Debian packages) and
# scripts/fetch_sources.sh (pinned tree-sitter grammars and simdjson from npm) first, so it works on a fresh
# machine; both do nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
if [ "${1:-}" = "--target" ]; then
  targets=(--target "$2")
  shift 2
fi
bash scripts/setup.sh
bash scripts/fetch_sources.sh
build_dir=${1:-build}
shift || true
jobs=${RLSCORE_JOBS:-2}
if [ ! -f "$build_dir/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$build_dir" -G Ninja "$@"
fi
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"

#!/usr/bin/env bash
# Installs what is missing, builds, and runs the server with its built-in default configuration:
# gRPC on 127.0.0.1:50051, Prometheus metrics on 127.0.0.1:9464. Extra arguments go to
# `rlscore serve` (see `rlscore serve --help`). Stop it with Ctrl-C or SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what serving needs: the binary and, where nvcc is installed, the CUDA module.
bash scripts/build.sh --target rlscore_server build >&2
exec build/cli/rlscore serve "$@"

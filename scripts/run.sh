#!/usr/bin/env bash
# Installs what is missing, builds, and runs the server with its built-in default configuration:
# gRPC on 127.0.0.1:50051, Prometheus metrics on 127.0.0.1:9464. Extra arguments go to
# `rlscore serve` (see `rlscore serve --help`). Stop it with Ctrl-C or SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build >&2
exec build/cli/rlscore serve "$@"

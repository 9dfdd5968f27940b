#!/usr/bin/env bash
# Installs every Debian package rlscore needs to build, test and serve. Idempotent: packages already
# present are skipped, and nothing is fetched when everything is there. Safe to run with no stdin (CI).
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config clang-format
  # service
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libre2-dev
  prometheus-cpp-dev nlohmann-json3-dev libcivetweb-dev
  # scorers: Unicode character data for the IF task's words and case
  libutf8proc-dev
  # scorers: the tree-sitter runtime; scripts/fetch_sources.sh fetches the grammars (and simdjson)
  # from the npm registry with curl at pinned versions and checks their sha512 with openssl
  libtree-sitter-dev curl ca-certificates openssl
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # end-to-end tests: Debian's Python with gRPC (curl, above, reads /metrics)
  python3-grpcio python3-protobuf
  # the Python package (python/): pybind11 and Python's headers build its native module; venv
  # and pip install it; numpy carries its arrays; pytest runs its tests
  pybind11-dev python3-dev python3-venv python3-pip python3-setuptools python3-wheel python3-numpy
  python3-pytest
)
# `--test-tools`: what only the tests use (scripts/test.sh passes it): headless Chromium opens the
# HTML report of `rlscore score`; podman (with runc) and mmdebstrap build and run the container
# image from a locally made Debian base (tests/docker); yamllint, jsonschema, PyYAML and unzip
# check the Helm chart (tests/helm, which fetches helm itself); clang and its runtimes build the
# sanitizer suites and the libFuzzer targets (docs/RELIABILITY.md); python3-h2 speaks raw HTTP/2
# for the fault tests' client that never reads its answers (tests/e2e/fault_test.py); git clones
# the repository into a fresh Debian root (tests/setup). npm and Node fetch helm and the Kubernetes
# models and run the manifest validator (tests/helm): Debian's npm unless an npm is already on PATH
# (a Node from elsewhere owns /usr/bin/npm, and Debian's would conflict with it). promtool, from
# Debian's prometheus, evaluates the chart's alerts against a replay of the incident (tests/helm).
if [ "${1:-}" = "--test-tools" ]; then
  packages+=(chromium podman runc mmdebstrap yamllint python3-jsonschema python3-yaml unzip
             clang-14 libclang-rt-14-dev python3-h2 git prometheus)
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test (ctest) in three builds, the
# README's test command and what CI runs (.ci/run):
#   build/       the product: GCC at CMAKE_BUILD_TYPE=Release (-O3), the CUDA module when nvcc is
#                there (its GPU tests skip without a device), the container image, the Helm chart
#                and the README's run command in a fresh Debian root;
#   build-asan/  clang (RelWithDebInfo, the sanitizer builds' default) with AddressSanitizer +
#                UndefinedBehaviorSanitizer (leaks included), CUDA
#                off (the server must build, start and serve without it), and the libFuzzer
#                targets, each run for RLSCORE_FUZZ_SECONDS (20) from its seed corpus;
#   build-tsan/  clang with ThreadSanitizer (docs/RELIABILITY.md "Sanitizers": tests/tsan.supp,
#                tests/tsan_ignorelist.txt and common/tsan_handoff.h), only the tests that start
#                threads: the end-to-end ones and the programs marked THREADS (tests/CMakeLists.txt).
# Extra arguments go to every ctest, e.g. scripts/test.sh -R Server.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${RLSCORE_JOBS:-2}
# The sanitizer suites wait on their servers more than they compute (at -j2 a third of both cores
# sat idle under ASan, half under TSan): one test more at a time took TSan's from 264 to 227 s and
# ASan's from 455 to 362 s (about 13 s of that from a faster copier test), though three fuzz targets
# at once each get two thirds of a core for their 20 s. The product build's suite keeps -j2: its
# fresh-Debian and container tests compile.
sanitizer_test_jobs=$((jobs + 1))
# Real model outputs and other projects' test cases, where they sit beside the checkout (CI has
# them): the tests that read them say they skipped without them.
if [ -z "${RLSCORE_PEERS_DIR:-}" ] && [ -d ../shared/peers ]; then
  export RLSCORE_PEERS_DIR="$(cd ../shared/peers && pwd)"
fi
bash scripts/setup.sh --test-tools

bash scripts/build.sh build -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build --output-on-failure --timeout 300 -j "$jobs" "$@"

sanitized=(-DRLSCORE_WITH_CUDA=OFF -DRLSCORE_BUILD_BENCH=OFF -DRLSCORE_DEPLOY_TESTS=OFF
           -DRLSCORE_PYTHON=OFF)
echo "== ASan + UBSan, without CUDA, and the fuzz targets =="
CC=clang-14 CXX=clang++-14 bash scripts/build.sh build-asan -DRLSCORE_SANITIZE=address \
  -DRLSCORE_FUZZ=ON "${sanitized[@]}"
ctest --test-dir build-asan --output-on-failure --timeout 600 -j "$sanitizer_test_jobs" "$@"

echo "== TSan =="
CC=clang-14 CXX=clang++-14 bash scripts/build.sh build-tsan -DRLSCORE_SANITIZE=thread \
  "${sanitized[@]}"
ctest --test-dir build-tsan --output-on-failure --timeout 900 -j "$sanitizer_test_jobs" "$@"

#!/usr/bin/env bash
# The prepared GPU check of the CUDA batch path (docs/GPU.md), for a short device window.
#
#   gpu/run_device_checks.sh [OUT_DIR]          (default: $OUT, else /tmp/rlscore-gpu-checks)
#
# Builds the CUDA-only targets from gpu/ (needs CMake, a C++ compiler and the CUDA toolkit; not
# Debian's gRPC or abseil), runs the parity test (10^3 … 10^8 rewards, every case bit-identical to
# the CPU reference), the benchmark (kernels vs a device-to-device copy, cuBLAS group sums, the
# module call vs the CPU by batch size), and PyTorch's GRPO advantage on the same 10^8 rewards
# when torch imports. Prints a short table at the end; every full output is kept in OUT_DIR.
# Sized for about four minutes on an H200, so a 15-minute window leaves room for a rerun.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/rlscore-gpu-checks}}
data=$(mktemp -d /tmp/rlscore-gpu-data.XXXXXX)  # 800 MB of rewards: never in OUT_DIR
trap 'rm -rf "$data"' EXIT
mkdir -p "$out"
start=$(date +%s)
step() { echo "== $* ($(($(date +%s) - start)) s)"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$out/device.txt"
nvcc --version | tail -1 | tee -a "$out/device.txt"

step "build (gpu/ standalone, sm_90)"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
if ! cmake -S gpu -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/build.log" 2>&1 ||
   ! cmake --build build-gpu -j "$(nproc)" >> "$out/build.log" 2>&1; then
  tail -30 "$out/build.log"
  echo "BUILD FAILED"
  exit 1
fi

step "parity"
timeout 300 build-gpu/gpu_parity_test > "$out/parity.txt" 2>&1
parity_rc=$?
tail -4 "$out/parity.txt"
# Each kernel path must hold on every batch, not only where the defaults send it (kernels.h):
# a tile per group everywhere (0 0), a thread per group for groups up to 64 (64 0), tiles and
# threads in shared memory for groups up to 64 (0 64); and each of them, and the defaults
# (16 0), with uniform groups found from their index (RLSCORE_GPU_UNIFORM_OFFSETS=1).
for uniform in 0 1; do
  for paths in "16 0" "0 0" "64 0" "0 64"; do
    [ "$uniform $paths" = "0 16 0" ] && continue  # the full run above
    read -r threads tiles <<< "$paths"
    settings="RLSCORE_GPU_STAGED_GROUP_MAX=$threads RLSCORE_GPU_STAGED_TILE_MAX=$tiles"
    settings="$settings RLSCORE_GPU_UNIFORM_OFFSETS=$uniform"
    step "parity, $settings"
    echo "== $settings" >> "$out/parity.txt"
    # shellcheck disable=SC2086  # the settings are words
    env $settings timeout 200 build-gpu/gpu_parity_test --quick >> "$out/parity.txt" 2>&1 ||
      parity_rc=1
    tail -1 "$out/parity.txt"
  done
done

step "benchmark"
timeout 240 build-gpu/gpu_advantage_bench --data-dir "$data" > "$out/bench.txt" 2>&1
bench_rc=$?
cat "$out/bench.txt"

torch_rc=skipped
if python3 -c 'import torch; assert torch.cuda.is_available()' > /dev/null 2>&1 &&
   [ -f "$data/rewards_1e8.f64" ]; then
  step "pytorch"
  timeout 120 python3 bench/torch_grpo_bench.py "$data/rewards_1e8.f64" 16 > "$out/torch.txt" 2>&1
  torch_rc=$?
  cat "$out/torch.txt"
fi

# Bad memory accesses and races in the kernels, on a small batch (runs only where the runtime
# lets compute-sanitizer at the device; informational, it does not change the exit status).
if command -v compute-sanitizer > /dev/null; then
  step "compute-sanitizer (memcheck, racecheck) on the --small parity run"
  : > "$out/sanitizer.txt"
  for tool in memcheck racecheck; do
    timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      build-gpu/gpu_parity_test --small > "$data/sanitizer.log" 2>&1
    echo "$tool: exit $? ($(tail -1 "$data/sanitizer.log"))" | tee -a "$out/sanitizer.txt"
    tail -20 "$data/sanitizer.log" | sed "s/^/  $tool| /" >> "$out/sanitizer.txt"
  done
fi

# Where the kernels' time goes (informational): Nsight Compute on one launch of each path per
# layout at 10^7 rewards, where the runtime lets it read the counters.
if command -v ncu > /dev/null; then
  step "ncu"
  timeout 150 ncu --kernel-name regex:'Group|Staged|Scan|Tree' --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section LaunchStats build-gpu/gpu_advantage_bench --profile \
    > "$out/ncu.txt" 2>&1
  echo "ncu: exit $? ($(grep -c '^  [A-Za-z].*Kernel' "$out/ncu.txt") kernels profiled)"
fi

step "summary"
{
  echo "parity: $(grep -c ' PASS$' "$out/parity.txt") cases passed," \
       "$(grep -c ' FAIL$' "$out/parity.txt") failed (exit $parity_rc)"
  ours=$(awk '$1 == 100000000 && $2 == "groups" && $3 == "16" { print $4 }' "$out/bench.txt")
  copy=$(awk '$1 == 100000000 && $2 == "groups" && $3 == "16" { print $5 }' "$out/bench.txt")
  of_copy=$(awk '$1 == 100000000 && $2 == "groups" && $3 == "16" { print $7 }' "$out/bench.txt")
  echo "10^8 rewards, groups of 16: kernels ${ours:-?} ms, d2d copy ${copy:-?} ms," \
       "${of_copy:-?} of copy bandwidth (goal >= 60 %) (bench exit $bench_rc)"
  if [ -f "$out/torch.txt" ]; then
    torch64=$(awk '$2 == "float64" { print $8 }' "$out/torch.txt")
    torch32=$(awk '$2 == "float32" { print $8 }' "$out/torch.txt")
    echo "PyTorch GRPO advantage on the same data: float64 ${torch64:-?} ms," \
         "float32 ${torch32:-?} ms (exit $torch_rc); goal: kernels faster"
  else
    echo "PyTorch: not available on this machine"
  fi
  echo "10^8 rewards, every layout and kernel path (ms; of copy = default path vs the d2d copy):"
  awk '/^1\./ { on = 1 } /^2\./ { on = 0 } on && ($1 == "N" || $1 == 100000000) { print "  " $0 }' \
    "$out/bench.txt"
  # Which path each layout should take (Workspace::staged_group_max, staged_tile_max,
  # shared_carveout, uniform_offsets in gpu/kernels.h): the fastest column of table 1 at 10^8
  # rewards.
  awk '/^1\./ { on = 1 } /^2\./ { on = 0 }
       on && $1 == 100000000 {
         split("tile thread thread+max-carveout staged-tile staged-tile+max-carveout " \
               "default+uniform-offsets", name, " ")
         best = 1
         for (k = 2; k <= 6; ++k) if ($(7 + k) > 0 && $(7 + k) < $(7 + best)) best = k
         printf "  fastest for %s %s: %s (%.3f ms, %.0f%% of copy)\n", $2, $3, name[best],
                $(7 + best), 100 * $5 / $(7 + best)
       }' "$out/bench.txt"
  echo "crossover (module call vs CPU, groups of 16):"
  awk '/^2\./ { on = 1; next } on && NF == 5 { print "  " $0 }' "$out/bench.txt"
  [ -f "$out/sanitizer.txt" ] && grep '^[a-z]*: exit' "$out/sanitizer.txt" | sed 's/^/compute-sanitizer /'
  echo "total $(($(date +%s) - start)) s"
} | tee "$out/summary.txt"
[ "$parity_rc" -eq 0 ]

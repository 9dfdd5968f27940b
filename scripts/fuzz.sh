#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (docs/RELIABILITY.md "Fuzzing").
#
#   scripts/fuzz.sh [--runs N | --seconds S] [--parallel P] [--jobs J] [--no-build] [--timeout T]
#                   [--save] [TARGET...]
#       A campaign: builds build-asan (clang, ASan+UBSan, RLSCORE_FUZZ=ON; --no-build uses it as it
#       is), then runs each target (all by default) for N executions (default 10,000,000) or S
#       seconds, P at a time, from the seeds and the kept corpus KEPT/<target>/, keeping
#       what it finds in build-asan/fuzz/corpus/<target>/; prints a table of executions, time and
#       coverage. --jobs J runs each target as J processes that share that corpus (libFuzzer
#       reloads it, so each goes on from what the others found), N/J executions or S seconds each;
#       the row sums their executions (a slow target on J spare cores). Logs:
#       build-asan/fuzz/logs/<target>.log (with --jobs: .log.1 to .log.J). --save then merges
#       what the campaign found into KEPT/<target>/ (only inputs that add edges, so the next
#       campaign starts where this one ended) and empties build-asan/fuzz/corpus/<target>/.
#       KEPT is $RLSCORE_FUZZ_CORPUS, else ~/.cache/rlscore/fuzz-corpus: campaign corpora are
#       machine-grown and live outside the repository (tens of thousands of files); what the
#       repository keeps is the seeds (fuzz/make_seeds.py, from the tests) and the minimised
#       regressions (fuzz/regressions/<target>/).
#   scripts/fuzz.sh --binary PATH --seeds DIR [--seeds DIR...] (--runs N | --seconds S)
#       One target (what ctest's fuzz.<target> tests run, from the seeds alone): replays
#       fuzz/regressions/<target>/, then fuzzes from the seeds into a scratch corpus.
# A crash, leak, timeout (T seconds of wall time for one input, default 10: raise it for a campaign
# that runs niced beside other work) or out-of-memory (2 GiB) fails the run and leaves the
# input in build-asan/fuzz/artifacts/; reproduce with `PATH_TO_TARGET ARTIFACT`. Fixed findings go
# to fuzz/regressions/<target>/ with a unit test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
kept_root=${RLSCORE_FUZZ_CORPUS:-$HOME/.cache/rlscore/fuzz-corpus}

runs="" seconds="" parallel=1 fuzz_jobs=1 binary="" corpus="" build=1 timeout=10 save=0
targets=() seeds=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --jobs) fuzz_jobs=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --seeds) seeds+=("$2"); shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --save) save=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "scripts/fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ -z "$runs" ] && [ -z "$seconds" ]; then runs=10000000; fi
[[ $fuzz_jobs =~ ^[1-9][0-9]*$ ]] || {
  echo "scripts/fuzz.sh: --jobs wants a count, got $fuzz_jobs" >&2; exit 2; }
limit=(); [ -n "$runs" ] && limit+=("-runs=$(((runs + fuzz_jobs - 1) / fuzz_jobs))")
[ -n "$seconds" ] && limit+=("-max_total_time=$seconds")

# ASan's quarantine (freed memory held back so a use after free is caught) is 256 MB by default;
# 64 MB still holds many inputs' frees and keeps the heap each leak check scans small: in an
# ast_repetition_fuzz campaign the checks went from 25 % of its time to 4 %, peak RSS 806 -> 615 MB
# a job (docs/RELIABILITY.md "Leak checks").
asan_options=detect_leaks=1:quarantine_size_mb=64

# One target: regressions first, then fuzzing from the seed directories that exist. Exit status:
# the target's.
run_one() {
  local bin=$1 work=$2 log=$3
  shift 3
  local seed_dirs=() dir
  for dir in "$@"; do [ -d "$dir" ] && seed_dirs+=("$dir"); done
  local name; name=$(basename "$bin")
  local artifacts; artifacts=$(dirname "$bin")/artifacts
  mkdir -p "$artifacts" "$work"
  local regressions=$root/fuzz/regressions/$name
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    "$bin" -timeout=10 -rss_limit_mb=2048 "$regressions"/* > "$log.regressions" 2>&1 || {
      cat "$log.regressions"; echo "$name: a regression input fails again" >&2; return 1; }
  fi
  # New inputs go to the first directory (the scratch corpus); the seeds are only read. A run
  # stopped with SIGINT (libFuzzer prints its statistics and exits 72) is reported, not failed.
  local logs=() k
  local -A log_of=()
  for ((k = 1; k <= fuzz_jobs; k++)); do
    local job_log=$log; [ "$fuzz_jobs" = 1 ] || job_log=$log.$k
    logs+=("$job_log")
    ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options} "$bin" "${limit[@]}" -timeout="$timeout" \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
      "$work" "${seed_dirs[@]}" > "$job_log" 2>&1 &
    log_of[$!]=$job_log
  done
  # Jobs in the order they end; the first that fails stops the others. Polled, not `wait -n`:
  # bash 5.2's `wait -n -p PID PIDS...` loses a job that ends together with another (SIGINT to
  # both: "wait: PID: no such job", and the job read as failed). bash reaps an ended job at once
  # and keeps its status, so `kill -0` then fails and `wait PID` returns that status.
  local state=ok pid rc job_log job
  while [ ${#log_of[@]} -gt 0 ]; do
    pid=""
    for job in "${!log_of[@]}"; do
      kill -0 "$job" 2> /dev/null || { pid=$job; break; }
    done
    if [ -z "$pid" ]; then sleep 0.2; continue; fi
    rc=0
    wait "$pid" || rc=$?
    job_log=${log_of[$pid]}
    unset "log_of[$pid]"
    [ "$rc" = 0 ] && continue
    if grep -q '^==[0-9]*== libFuzzer: run interrupted; exiting$' "$job_log"; then
      state=interrupted
      continue
    fi
    tail -60 "$job_log"
    echo "$name: FAILED ($job_log); the input is in $artifacts/ (reproduce: $bin ARTIFACT)" >&2
    for pid in "${!log_of[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
    wait || true
    return 1
  done
  local execs=0 secs=0 cov=0 peak=0 value
  for job_log in "${logs[@]}"; do
    # Executions add up over the jobs; time, coverage and peak memory are the largest job's.
    value=$(sed -n 's/^stat::number_of_executed_units: *//p' "$job_log")
    execs=$((execs + ${value:-0}))
    value=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$job_log")
    if [ -z "$value" ]; then
      local rate; rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$job_log")
      local units; units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$job_log")
      [ -n "$rate" ] && [ "$rate" -gt 0 ] && value=$((units / rate))
    fi
    [ "${value:-0}" -gt "$secs" ] && secs=$value
    value=$(grep -o 'cov: [0-9]*' "$job_log" | tail -1 | cut -d' ' -f2)
    [ "${value:-0}" -gt "$cov" ] && cov=$value
    value=$(sed -n 's/^stat::peak_rss_mb: *//p' "$job_log")
    [ "${value:-0}" -gt "$peak" ] && peak=$value
  done
  printf '%-26s %12s execs %6ss  cov %6s  corpus %6s  peak %5s MB  %s\n' "$name" "$execs" \
    "$secs" "$cov" "$(ls "$work" | wc -l)" "$peak" "$state"
  # libFuzzer gives up its leak check after every mutation when most inputs end with more
  # allocations than frees (memory kept across inputs: caches). The exit check still runs.
  if grep -q '^INFO: libFuzzer disabled leak detection after every mutation' "${logs[@]}"; then
    echo "$name: leak checks after each input turned off by libFuzzer (memory kept across" \
         "inputs); LeakSanitizer still checked the whole run at exit"
  fi
}

# Merges a campaign's corpus into the kept one, KEPT/<target>/: only inputs that reach edges the
# kept corpus does not. Edges, not hit counts (-use_counters=0): counted features kept 4,507
# inputs (17 MB) of one ast_repetition_fuzz campaign where edges alone keep 1,311 (3.3 MB), the
# same 7,097 edges, and every campaign loads the kept corpus first.
save_one() {
  local name=$1
  local kept=$kept_root/$name
  mkdir -p "$kept"
  local before; before=$(ls "$kept" | wc -l)
  build-asan/fuzz/"$name" -merge=1 -use_counters=0 -timeout="$timeout" -rss_limit_mb=2048 "$kept" \
    build-asan/fuzz/corpus/"$name" > build-asan/fuzz/logs/"$name".merge.log 2>&1 || {
    tail -20 build-asan/fuzz/logs/"$name".merge.log; echo "$name: merge FAILED" >&2; return 1; }
  echo "$name: $kept/ $before -> $(ls "$kept" | wc -l) inputs"
  # Every edge the campaign reached is kept now, so the next campaign starts from the kept corpus
  # alone. Left to grow, the scratch corpus held 28,548 inputs by the twelfth ast_repetition_fuzz
  # campaign: each job spent its first minutes running them again, and a job slows as the corpus
  # it holds grows (docs/RELIABILITY.md).
  rm -rf "build-asan/fuzz/corpus/$name"
}

if [ -n "$binary" ]; then
  [ ${#seeds[@]} -gt 0 ] || { echo "scripts/fuzz.sh: --binary needs --seeds" >&2; exit 2; }
  work=${corpus:-$(mktemp -d)}
  [ -n "$corpus" ] || trap 'rm -rf "$work"' EXIT
  run_one "$binary" "$work" "$(dirname "$binary")/$(basename "$binary").log" "${seeds[@]}"
  exit $?
fi

[ "$build" = 0 ] || bash scripts/setup.sh --test-tools
[ "$build" = 0 ] || CC=clang-14 CXX=clang++-14 bash scripts/build.sh build-asan -DRLSCORE_SANITIZE=address \
  -DRLSCORE_FUZZ=ON -DRLSCORE_WITH_CUDA=OFF -DRLSCORE_BUILD_BENCH=OFF -DRLSCORE_DEPLOY_TESTS=OFF
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^ *\([a-z_]*_fuzz\):.*/\1/p' fuzz/CMakeLists.txt)
fi
mkdir -p build-asan/fuzz/logs build-asan/fuzz/corpus
export -f run_one
export root timeout fuzz_jobs asan_options kept_root
per_job=""; [ "$fuzz_jobs" = 1 ] || per_job=" in each of $fuzz_jobs jobs"
echo "fuzzing ${targets[*]} (${limit[*]}$per_job), $parallel at a time"
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c \
  "$(declare -p limit); run_one build-asan/fuzz/{} build-asan/fuzz/corpus/{} \
   build-asan/fuzz/logs/{}.log build-asan/fuzz/seeds/{} \"\$kept_root\"/{}" || status=$?
if [ "$save" = 1 ]; then
  for name in "${targets[@]}"; do save_one "$name" || status=1; done
fi
exit $status

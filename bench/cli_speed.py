#!/usr/bin/python3
"""Whole-process speed of `rlscore score`: against a plain-Python reward pipeline, and by threads.

  vs-python  Converts CORPUS (R1-style completions: prompt_id, completion, gold, tokens_est, kind,
             as the benchmark kit's gen_corpus.py writes them) into rollout lines, then times, in
             alternating pairs, `rlscore score` on them and `python3 REFERENCE CORPUS` (the kit's
             py_reference.py: format regex, word 3-gram repetition ratio, DAPO soft overlong, no
             answer verification). Prints each pair and the median ratio of wall times.
  threads    Repeats the converted CORPUS --copies times into one file, then times
             `--scoring-threads 1` and `--scoring-threads 2` in alternating pairs, checks that
             both write the same bytes, and prints the median speed-up and MB/s.

  /usr/bin/python3 bench/cli_speed.py --binary build/cli/rlscore vs-python \\
      --corpus corpus.jsonl --reference py_reference.py [--pairs 5]
  /usr/bin/python3 bench/cli_speed.py --binary build/cli/rlscore threads \\
      --corpus corpus.jsonl [--copies 20] [--pairs 5]
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def convert(corpus, out):
    """The kit's conversion to rollout lines (its README's recipe)."""
    with open(corpus) as src, open(out, "w") as dst:
        for line in src:
            r = json.loads(line)
            dst.write(json.dumps({"prompt_id": str(r["prompt_id"]), "completion": r["completion"],
                                  "reference": str(r["gold"]).strip("$"),
                                  "num_tokens": r["tokens_est"],
                                  "finished": r["kind"] == "normal"}) + "\n")


def timed(argv, stdout=subprocess.DEVNULL):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed: {done.stderr.decode()}")
    return elapsed


def describe_interpreter(python):
    """`python` as named, the interpreter it runs and its version: the ratio depends on them (a
    pyenv shim starts each process 0.08 s later than the interpreter it runs, and Debian's
    PGO-built python3 runs the pipeline in about two thirds of the time of a plain build)."""
    probe = "import sys; print(sys.executable, sys.version.split()[0])"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"--python {python} does not run: {e}")
    if found.returncode != 0:
        sys.exit(f"--python {python} does not run: {found.stderr.strip()}")
    executable, version = found.stdout.split()
    return f"{python} ({shutil.which(python) or python}) runs {executable}, Python {version}"


def vs_python(args, rollouts):
    print(f"reference interpreter: {describe_interpreter(args.python)}")
    ratios, ours, theirs = [], [], []
    for pair in range(args.pairs):
        a = timed([args.binary, "score", rollouts, "--output", os.devnull, "--progress=never"])
        b = timed([args.python, args.reference, args.corpus])
        ours.append(a)
        theirs.append(b)
        ratios.append(b / a)
        print(f"pair {pair + 1}: rlscore {a:.3f} s, python {b:.3f} s, {b / a:.1f}x")
    print(f"median: rlscore {statistics.median(ours):.3f} s, python "
          f"{statistics.median(theirs):.3f} s, rlscore is {statistics.median(ratios):.1f}x faster")


def threads(args, rollouts, tmp):
    big = os.path.join(tmp, "copies.jsonl")
    with open(rollouts, "rb") as src:
        data = src.read()
    with open(big, "wb") as dst:
        for _ in range(args.copies):
            dst.write(data)
    megabytes = len(data) * args.copies / 1e6
    times = {1: [], 2: []}
    digests = set()
    for pair in range(args.pairs):
        for t in (1, 2):
            out = os.path.join(tmp, f"out{t}.jsonl")
            times[t].append(timed([args.binary, "score", big, "--output", out,
                                   "--progress=never", f"--scoring-threads={t}"]))
            with open(out, "rb") as f:
                digests.add(hashlib.sha256(f.read()).hexdigest())
        print(f"pair {pair + 1}: 1 thread {times[1][-1]:.3f} s, 2 threads {times[2][-1]:.3f} s, "
              f"{times[1][-1] / times[2][-1]:.2f}x")
    if len(digests) != 1:
        sys.exit("the outputs differ between thread counts")
    one, two = statistics.median(times[1]), statistics.median(times[2])
    speedups = [a / b for a, b in zip(times[1], times[2])]
    print(f"median over {megabytes:.0f} MB: 1 thread {one:.3f} s ({megabytes / one:.0f} MB/s), "
          f"2 threads {two:.3f} s ({megabytes / two:.0f} MB/s), speed-up "
          f"{statistics.median(speedups):.2f}x; outputs identical")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("vs-python")
    p.add_argument("--corpus", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--python", default="python3",
                   help="the interpreter for REFERENCE (default: python3 on PATH)")
    p.add_argument("--pairs", type=int, default=5)
    p = sub.add_parser("threads")
    p.add_argument("--corpus", required=True)
    p.add_argument("--copies", type=int, default=20)
    p.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlscore-speed-") as tmp:
        rollouts = os.path.join(tmp, "rollouts.jsonl")
        convert(args.corpus, rollouts)
        if args.mode == "vs-python":
            vs_python(args, rollouts)
        else:
            threads(args, rollouts, tmp)


if __name__ == "__main__":
    main()

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
  forms      Writes the converted CORPUS in the three forms trainers send: the completion as
             text; the same with word-level token ids (words and punctuation marks numbered in
             order of first appearance, about 6,000 a line); and the completion as a chat
             message list. Times the whole process on each in alternating rounds, checks that
             the chat form scores exactly as the text form, and prints each form's median wall
             time and CPU (user + system).

  /usr/bin/python3 bench/cli_speed.py --binary build/cli/rlscore vs-python \\
      --corpus corpus.jsonl --reference py_reference.py [--pairs 5]
  /usr/bin/python3 bench/cli_speed.py --binary build/cli/rlscore threads \\
      --corpus corpus.jsonl [--copies 20] [--pairs 5]
  /usr/bin/python3 bench/cli_speed.py --binary build/cli/rlscore forms \\
      --corpus corpus.jsonl [--rounds 15]
"""

import argparse
import hashlib
import json
import os
import re
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


def write_forms(rollouts, tmp):
    """The rollout lines as text, with token ids, and as chat messages: {form: path}."""
    paths = {form: os.path.join(tmp, f"{form}.jsonl") for form in ("text", "token_ids", "chat")}
    vocabulary = {}
    with open(rollouts) as src, open(paths["text"], "w") as text, \
            open(paths["token_ids"], "w") as ids, open(paths["chat"], "w") as chat:
        for line in src:
            text.write(line)
            r = json.loads(line)
            words = re.findall(r"\w+|[^\w\s]", r["completion"])
            r_ids = dict(r, token_ids=[vocabulary.setdefault(w, len(vocabulary) + 100)
                                       for w in words])
            ids.write(json.dumps(r_ids) + "\n")
            chat.write(json.dumps(dict(r, completion=[{"role": "assistant",
                                                       "content": r["completion"]}])) + "\n")
    return paths


def timed_cpu(argv, stdout):
    """Wall seconds and CPU seconds (user + system) of one run of `argv`."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed with status {status}")
    return elapsed, usage.ru_utime + usage.ru_stime


def forms(args, rollouts, tmp):
    paths = write_forms(rollouts, tmp)
    wall = {form: [] for form in paths}
    cpu = {form: [] for form in paths}
    outputs = {}
    for round_ in range(args.rounds):
        order = list(paths) if round_ % 2 == 0 else list(reversed(paths))
        for form in order:
            out = os.path.join(tmp, f"out-{form}.jsonl")
            with open(out, "wb") as f:
                w, c = timed_cpu([args.binary, "score", paths[form], "--output", "-",
                                  "--progress=never"], f)
            wall[form].append(w)
            cpu[form].append(c)
            with open(out, "rb") as f:
                outputs[form] = f.read()
    if outputs["chat"] != outputs["text"]:
        sys.exit("the chat form scores differently from the text form")
    for form in paths:
        megabytes = os.path.getsize(paths[form]) / 1e6
        print(f"{form}: {megabytes:.1f} MB, wall {statistics.median(wall[form]) * 1e3:.1f} ms, "
              f"CPU {statistics.median(cpu[form]) * 1e3:.1f} ms (medians of {args.rounds})")
    print("chat and text forms: outputs identical")


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
    p = sub.add_parser("forms")
    p.add_argument("--corpus", required=True)
    p.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlscore-speed-") as tmp:
        rollouts = os.path.join(tmp, "rollouts.jsonl")
        convert(args.corpus, rollouts)
        if args.mode == "vs-python":
            vs_python(args, rollouts)
        elif args.mode == "threads":
            threads(args, rollouts, tmp)
        else:
            forms(args, rollouts, tmp)


if __name__ == "__main__":
    main()

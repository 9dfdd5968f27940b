#!/usr/bin/python3
"""End-to-end rollouts/s of `rlscore score` on the 10,000-line file of the e2e test.

Generates the file (tests/e2e/make_rollouts.py, seed 1), then scores it --repeats times
in-process and --repeats times through a local `rlscore serve`, interleaved, and prints the wall
time and rollouts/s of each run and the median of each mode. The server runs on the same machine,
so the two modes share its cores.

  /usr/bin/python3 bench/cli_throughput.py --binary build/cli/rlscore [--lines 10000] [--repeats 5]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import make_rollouts  # noqa: E402
from harness import RunningServer  # noqa: E402


def timed(binary, path, *extra):
    start = time.perf_counter()
    done = subprocess.run([binary, "score", path, "--output", os.devnull, "--progress=never",
                           *extra], capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode())
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--lines", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rollouts.jsonl")
        with open(path, "w") as f:
            for line in make_rollouts.generate(args.lines, seed=1):
                f.write(__import__("json").dumps(line) + "\n")
        size = os.path.getsize(path)
        print("file: %d lines, %.1f MB" % (args.lines, size / 1e6))
        server = RunningServer(args.binary)
        try:
            runs = {"in-process": [], "server": []}
            batch = "--batch-size=%d" % args.batch_size
            for _ in range(args.repeats):
                runs["in-process"].append(timed(args.binary, path, batch))
                runs["server"].append(timed(args.binary, path, batch, "--server", server.address))
        finally:
            server.stop()
    for mode, times in runs.items():
        print("%-11s runs %s s; median %.3f s = %.0f rollouts/s" % (
            mode, " ".join("%.3f" % t for t in times), statistics.median(times),
            args.lines / statistics.median(times)))


if __name__ == "__main__":
    main()

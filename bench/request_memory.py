#!/usr/bin/python3
"""Peak server memory per request byte: one large request at a time against `rlscore serve`.

For each case a fresh server (budget large enough to admit it) answers one request; the growth
of its VmHWM over the idle server's is divided by the request's size on the wire:

  ComputeAdvantages  40 million rewards in groups of 8 (325 MB), and in groups of 1
  ScoreGroups        200,000 short looping completions in groups of 8; 4,000 of 50 KB
  Score              200,000 short looping completions

    /usr/bin/python3 bench/request_memory.py --binary build/cli/rlscore --stubs build/python

Needs Debian's python3-grpcio and about 4 GB of free memory. Results: docs/PERFORMANCE.md.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import RunningServer, compute_advantages_bytes, status_kib  # noqa: E402


def scoring_request(pb, method, completions, size):
    loop = ("<think>" + ("We try the next case and check it again. " * (size // 42 + 1))[:size]
            + "</think> The answer is \\boxed{%d}.")
    if method == "ScoreGroups":
        request = pb.ScoreGroupsRequest()
        for _ in range(completions // 8):
            group = request.groups.add(references=["42"])
            for i in range(8):
                group.completions.add(text=(loop % (40 + i)).encode(), finished=True)
    else:
        request = pb.ScoreRequest()
        for i in range(completions):
            request.items.add(references=["42"], completion=pb.Completion(
                text=(loop % (40 + i % 8)).encode(), finished=True))
    return request.SerializeToString()


def measure(binary, method, wire):
    server = RunningServer(binary, "--memory-budget-bytes=%d" % (64 << 30))
    try:
        before = status_kib(server.proc.pid, "VmHWM") * 1024
        call = server.channel().unary_unary("/rlscore.v1.ScoringService/" + method)
        start = time.monotonic()
        answer = call(wire, timeout=900)
        seconds = time.monotonic() - start
        peak = status_kib(server.proc.pid, "VmHWM") * 1024
    finally:
        server.stop()
    return peak - before, len(answer), seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.stubs)
    from rlscore.v1 import scoring_pb2

    cases = [
        ("ComputeAdvantages", "40M rewards, groups of 8", lambda: compute_advantages_bytes(40_000_000, 8)),
        ("ComputeAdvantages", "16M rewards, groups of 1", lambda: compute_advantages_bytes(16_000_000, 1)),
        ("ScoreGroups", "200k completions of 100 B",
         lambda: scoring_request(scoring_pb2, "ScoreGroups", 200_000, 100)),
        ("ScoreGroups", "4k completions of 50 KB",
         lambda: scoring_request(scoring_pb2, "ScoreGroups", 4_000, 50_000)),
        ("Score", "200k completions of 100 B",
         lambda: scoring_request(scoring_pb2, "Score", 200_000, 100)),
    ]
    print("| call | request | request MB | answer MB | peak RSS growth MB | per request byte |")
    print("|---|---|---:|---:|---:|---:|")
    for method, what, make in cases:
        wire = make()
        grew, answer, _ = measure(args.binary, method, wire)
        print("| %s | %s | %.0f | %.0f | %.0f | %.2f |" % (method, what, len(wire) / 1e6,
                                                        answer / 1e6, grew / 1e6, grew / len(wire)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

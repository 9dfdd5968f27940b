#!/usr/bin/python3
"""End-to-end: the same request gets the same reward under any load and any thread count.

3,000 looping completions (the ten AST-detector corpus files that loop with code clones or
repeated blocks, 300 copies each, with alternately a right and a wrong final answer) are scored

  - by `rlscore score` with 32 scoring threads while busy loops hog every core, and with one
    thread on an otherwise idle machine: the JSONL must be byte-identical, and the AST detector
    must have fired on every completion (a budget that ran out on a descheduled thread would
    leave some unpenalised);
  - by ScoreGroups, as 300 groups of ten, on a server with 32 scoring threads under the same
    load and on one with a single thread: the responses must be identical.

Run by ctest; standalone:

  /usr/bin/python3 tests/e2e/determinism_test.py --binary build/cli/rlscore \
      --stubs build/python -v
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import RunningServer  # noqa: E402

ARGS = None
CORPUS = os.path.join(HERE, "..", "scorers", "ast", "corpus", "looping")
COPIES = 300
REFERENCE = "42"


def looping_texts():
    """The corpus files whose loop the AST detector catches (01-10; 11+ are n-gram loops)."""
    names = sorted(n for n in os.listdir(CORPUS) if n[:2].isdigit() and int(n[:2]) <= 10)
    assert len(names) == 10, names
    texts = []
    for name in names:
        with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
            texts.append(f.read())
    return texts


def completion(text, i):
    """A finished completion: the looping reasoning, then a right or a wrong answer."""
    answer = REFERENCE if i % 2 == 0 else "41"
    return text.rstrip("\n") + "\n</think>\nThe answer is $\\boxed{%s}$." % answer


class BusyLoops:
    """One spinning process per core (at least two), for as long as the context lasts."""

    def __enter__(self):
        count = max(2, os.cpu_count() or 2)
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(count)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def config_args():
    """Under a sanitizer parses run 10-50 times slower: the wall-clock safety net (10 s by
    default, never reached by these texts in a plain build even at 32 threads on two loaded
    cores) is raised so that this test checks the work budgets, not the sanitizer's speed."""
    if not ARGS.sanitizer:
        return []
    path = os.path.join(tempfile.mkdtemp(), "server.textproto")
    with open(path, "w") as f:
        f.write('profiles { name: "default" repetition { ast { parse_timeout_micros: 600000000 } } }\n')
    return ["--config=" + path]


class Determinism(unittest.TestCase):
    def setUp(self):
        self.texts = looping_texts()
        self.dir = tempfile.mkdtemp()

    def score_cli(self, path, threads):
        out = subprocess.run(
            [ARGS.binary, "score", path, "--scoring-threads=%d" % threads, "--progress=never",
             *config_args()],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
        self.assertEqual(out.returncode, 0, out.stderr.decode(errors="replace")[-2000:])
        return out.stdout

    def test_score_cli_is_the_same_loaded_with_32_threads_and_idle_with_one(self):
        path = os.path.join(self.dir, "looping.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for i in range(COPIES * len(self.texts)):
                text = completion(self.texts[i % len(self.texts)], i // len(self.texts))
                f.write(json.dumps({"id": i, "completion": text, "reference": REFERENCE}) + "\n")
        with BusyLoops():
            loaded = self.score_cli(path, 32)
        idle = self.score_cli(path, 1)
        lines = loaded.decode().splitlines()
        self.assertEqual(len(lines), COPIES * len(self.texts))
        unpenalised = [json.loads(l) for l in lines
                       if json.loads(l)["components"]["repetition"] != -0.5]
        self.assertEqual(unpenalised, [], "every completion loops and must be penalised")
        detectors = {json.loads(l)["repetition"]["detector"] for l in lines}
        self.assertEqual(detectors, {"AST_BLOCK", "AST_CODE_CLONE"})
        if loaded != idle:
            for a, b in zip(lines, idle.decode().splitlines()):
                self.assertEqual(a, b)
        self.assertEqual(loaded, idle)

    def test_score_groups_is_the_same_loaded_with_32_threads_and_idle_with_one(self):
        sys.path.insert(0, ARGS.stubs)
        from rlscore.v1 import scoring_pb2, scoring_service_pb2_grpc

        request = scoring_pb2.ScoreGroupsRequest()
        for copy in range(COPIES):
            group = request.groups.add(references=[REFERENCE])
            for i, text in enumerate(self.texts):
                group.completions.add(text=completion(text, copy + i).encode(), finished=True)

        def score(threads):
            server = RunningServer(ARGS.binary, "--scoring-threads=%d" % threads, *config_args())
            try:
                stub = scoring_service_pb2_grpc.ScoringServiceStub(server.channel())
                return stub.ScoreGroups(request, timeout=900)
            finally:
                server.stop()

        with BusyLoops():
            loaded = score(32)
        idle = score(1)
        self.assertEqual(len(loaded.results), COPIES * len(self.texts))
        self.assertTrue(all(r.components.repetition == -0.5 for r in loaded.results))
        self.assertEqual(list(loaded.rewards), list(idle.rewards))
        self.assertEqual(list(loaded.advantages), list(idle.advantages))
        self.assertEqual(loaded.SerializeToString(deterministic=True),
                         idle.SerializeToString(deterministic=True))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--sanitizer", default="")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

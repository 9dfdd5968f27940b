#!/usr/bin/python3
"""End-to-end: three `rlscore serve` replicas behind one multi-target name, one killed and one
drained under a steady load, and nothing lost.

The Python client dials all three ("a,b,c", as a headless Service's DNS name resolves) and sends
ScoreGroups, Score and ComputeAdvantages calls at a steady rate for 30 s. Ten seconds in, one
replica is SIGKILLed (calls in flight on it break); twenty seconds in, another gets SIGTERM (it
drains and exits 0). Every call must succeed, each exactly once and with the answer its request
deserves; every replica must have served a share (its own /metrics, read before it went); the
client's counters say how many calls were retried. Then `rlscore score --server` over the same
three names, with one killed mid-file, writes output byte-identical to the in-process run.

  /usr/bin/python3 tests/e2e/replicas_test.py --binary build/cli/rlscore --stubs build/python -v
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (tests/e2e/harness.py)

ARGS = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def served_ok(metrics_text):
    """Calls the server answered OK, from its /metrics."""
    total = 0.0
    for line in metrics_text.splitlines():
        m = re.match(r'rlscore_requests_total\{([^}]*)\} (\S+)', line)
        if m and 'code="OK"' in m.group(1):
            total += float(m.group(2))
    return total


class Load:
    """Calls at a steady rate from a few threads; every answer is checked and kept once."""

    def __init__(self, client, seconds, rate, threads=4):
        self.client, self.seconds, self.rate, self.threads = client, seconds, rate, threads
        self.answers = {}  # call number -> what came back
        self.errors = []
        self.lock = threading.Lock()
        self.start = None

    def one(self, n):
        kind = n % 3
        if kind == 0:
            reply = self.client.score_groups(
                [{"prompt_id": "p%d" % n, "reference": str(n),
                  "completions": ["<think>x</think> \\boxed{%d}" % n,
                                  "<think>x</think> \\boxed{%d}" % (n + 1)]}],
                timeout=15)
            return ("groups", list(reply.rewards), list(reply.advantages))
        if kind == 1:
            reply = self.client.score(
                [{"prompt_id": "q%d" % n, "completion": "<think>y</think> \\boxed{%d}" % n,
                  "reference": str(n)}], timeout=15)
            return ("score", list(reply.rewards), [r.verdict for r in reply.results])
        reply = self.client.compute_advantages([0.0, 1.0, float(n)], group_sizes=[3], timeout=15)
        return ("advantages", list(reply.advantages), list(reply.groups.mean))

    def worker(self, k):
        n = k
        while True:
            due = self.start + n / self.rate
            if due - self.start >= self.seconds:
                return
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                answer = self.one(n)
            except Exception as e:  # noqa: BLE001 - every failure is a test failure, reported
                with self.lock:
                    self.errors.append((n, repr(e)))
            else:
                with self.lock:
                    if n in self.answers:
                        self.errors.append((n, "answered twice"))
                    self.answers[n] = answer
            n += self.threads

    def run_in_background(self):
        self.start = time.monotonic()
        threads = [threading.Thread(target=self.worker, args=(k,)) for k in range(self.threads)]
        for t in threads:
            t.start()
        return threads

    def expected(self, n):
        kind = n % 3
        if kind == 0:
            return ("groups", [1.1, 0.0], [0.7071067811865475, -0.7071067811865475])
        if kind == 1:
            return ("score", [1.1], [1])  # VERDICT_CORRECT
        third = float(n)
        mean = (0.0 + 1.0 + third) / 3
        return ("advantages", None, [mean])


class ReplicasTest(unittest.TestCase):

    def setUp(self):
        self.servers = [harness.RunningServer(ARGS.binary, "--drain-timeout-secs=10")
                        for _ in range(3)]
        for s in self.servers:
            self.addCleanup(self.stop_quietly, s)
        self.target = ",".join(s.address for s in self.servers)

    @staticmethod
    def stop_quietly(server):
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(30)
        server.wait(30)  # the log reader is done with stdout
        server.proc.stdout.close()

    def test_steady_load_through_a_kill_and_a_drain(self):
        from rlscore_client import Client
        client = Client(self.target, timeout=15, retries=8, backoff=0.05, max_backoff=0.5)
        self.addCleanup(client.close)
        # A run sticks to one replica, so its telemetry lives in one place.
        sticky = client._replicas.pick("run-A").address
        for step in range(3):
            client.score_groups([{"reference": "1", "completions": ["<think>a</think>\\boxed{1}",
                                                                    "<think>a</think>\\boxed{2}"]}],
                                run_id="run-A", step=step)
        health = client.run_health("run-A")
        self.assertEqual(len(health.runs), 1)
        self.assertEqual(health.runs[0].batches, 3)
        # The victims: never the run's replica, so its history is there to read at the end.
        victims = [s for s in self.servers if s.address != sticky]

        load = Load(client, seconds=30, rate=20)
        threads = load.run_in_background()
        served = {}
        time.sleep(10)
        served[victims[0].address] = served_ok(victims[0].metrics())
        victims[0].proc.kill()  # SIGKILL: calls in flight on it break
        victims[0].proc.wait(30)
        time.sleep(10)
        served[victims[1].address] = served_ok(victims[1].metrics())
        victims[1].stop(grace=30)  # SIGTERM: drains, must exit 0
        for t in threads:
            t.join(120)
        survivor = next(s for s in self.servers if s.address == sticky)
        served[survivor.address] = served_ok(survivor.metrics())

        calls = int(load.seconds * load.rate)
        self.assertEqual(load.errors, [])
        self.assertEqual(sorted(load.answers), list(range(calls)))
        for n, answer in load.answers.items():
            kind, values, extra = load.expected(n)
            self.assertEqual(answer[0], kind)
            if values is not None:
                self.assertEqual(answer[1], values, "call %d" % n)
            self.assertEqual([round(x, 9) for x in answer[2]], [round(x, 9) for x in extra],
                             "call %d" % n)
        # Every replica served a share while it lived.
        for address, count in served.items():
            self.assertGreater(count, 10, "%s served %s calls" % (address, count))
        stats = client.stats()
        sys.stderr.write("client stats: %s\nserved (from /metrics): %s\n" % (stats, served))
        self.assertEqual(stats["calls"], calls + 4)  # and the run's three steps and its health
        self.assertEqual(stats["attempts"], stats["calls"] + stats["retries"])
        self.assertGreaterEqual(stats["retried_calls"], 1)  # the kill broke calls in flight
        self.assertEqual(stats["not_retried_budget"], 0)
        # The run's replica still has its history.
        self.assertEqual(client.run_health("run-A").runs[0].batches, 3)

    def test_score_cli_over_replicas_is_byte_identical(self):
        rollouts = os.path.join(tempfile.mkdtemp(), "rollouts.jsonl")
        with open(rollouts, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "tests/e2e/make_rollouts.py"),
                            "--lines", "10000"], stdout=f, check=True)
        local = subprocess.run([ARGS.binary, "score", rollouts], capture_output=True, check=True)
        # Small batches, so that the run is hundreds of calls; a replica is killed once a tenth of
        # the output has come back, with calls in flight on it.
        # stderr to a file: only stdout is read as it comes, and a full stderr pipe (a sanitizer's
        # report) must not stall the run.
        err_file = tempfile.TemporaryFile()
        proc = subprocess.Popen([ARGS.binary, "score", rollouts, "--server", self.target,
                                 "--batch-size", "8"],
                                stdout=subprocess.PIPE, stderr=err_file)
        chunks, killed_at = [], None
        got = 0
        while True:
            chunk = proc.stdout.read1(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            got += chunk.count(b"\n")
            if killed_at is None and got >= 1000:
                self.servers[0].proc.kill()
                killed_at = got
        proc.wait(300)
        err_file.seek(0)
        err = err_file.read()
        self.assertEqual(proc.returncode, 0, err.decode())
        self.assertIsNotNone(killed_at)
        self.assertLess(killed_at, 9000, "the replica must die while the file is being scored")
        self.assertEqual(b"".join(chunks), local.stdout)
        sys.stderr.write("killed a replica after %d of %d lines\n" % (killed_at, got))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    ARGS, rest = parser.parse_known_args()
    sys.path[:0] = [os.path.abspath(ARGS.stubs), os.path.join(ROOT, "clients", "python")]
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

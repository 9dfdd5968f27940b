#!/usr/bin/python3
"""End-to-end: memory admission bounds what a burst of large requests costs the server.

Four ComputeAdvantages of 40 million rewards in groups of eight (325 MB each on the wire) are
sent at once to a server started with --memory-budget-bytes=1 GiB. Each is charged the peak its
handling reaches (about 915 MB: engine/request_cost.h), so one is admitted and answered
correctly, and the others are refused RESOURCE_EXHAUSTED naming the budget, with the trailer that
tells clients to retry. The server's peak RSS (VmHWM) must stay under

    budget + the three other requests' bytes + 128 MiB

what it admits (at most the budget), and the refused requests, which gRPC holds while they arrive
(it receives a whole message before any handler can see it) and which may still be arriving while
the first is handled; plus the process and its threads. Without admission the four would be
handled at once: 3.6 GB. Then the next requests are served, and the budget is all free again.

Under a sanitizer the requests are a tenth of the size, and RSS is not checked (the sanitizer's
shadow memory and quarantine are most of it). Run by ctest; standalone:

  /usr/bin/python3 tests/e2e/admission_test.py --binary build/cli/rlscore --stubs build/python -v
"""

import os
import re
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import RunningServer, compute_advantages_bytes, status_kib  # noqa: E402

ARGS = None
GROUP = 8
MARGIN = 128 << 20


def sample_advantages(first):
    """GRPO advantages of a group of rewards first, first+1, ... (mod 3), as
    compute_advantages_bytes makes them: (r - mean) / sample std."""
    rewards = [float((first + i) % 3) for i in range(GROUP)]
    mean = sum(rewards) / GROUP
    std = (sum((r - mean) ** 2 for r in rewards) / (GROUP - 1)) ** 0.5
    return [(r - mean) / std for r in rewards]


class Admission(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from rlscore.v1 import advantage_pb2
        cls.pb = advantage_pb2
        scale = 10 if ARGS.sanitizer else 1
        cls.rewards = 40_000_000 // scale
        cls.budget = (1 << 30) // scale
        cls.wire = compute_advantages_bytes(cls.rewards, GROUP)

    def start(self, budget):
        """A server with `budget`, and its ComputeAdvantages as bytes in, bytes out."""
        self.server = RunningServer(ARGS.binary, "--memory-budget-bytes=%d" % budget)
        self.addCleanup(self.server.stop)
        self.call = self.server.channel().unary_unary(
            "/rlscore.v1.ScoringService/ComputeAdvantages")

    def send(self, results):
        try:
            results.append(("OK", self.call(self.wire, timeout=600), None))
        except harness.grpc.RpcError as e:
            results.append((e.code().name, e.details(), dict(e.trailing_metadata() or ())))

    def check_answer(self, wire):
        reply = self.pb.ComputeAdvantagesResponse.FromString(wire)
        self.assertEqual(len(reply.advantages), self.rewards)
        self.assertEqual(len(reply.groups.mean), self.rewards // GROUP)
        for g in (0, 1, 2, self.rewards // GROUP - 1):
            expected = sample_advantages(g * GROUP % 3)
            got = list(reply.advantages[g * GROUP:(g + 1) * GROUP])
            for a, b in zip(got, expected):
                self.assertAlmostEqual(a, b, places=12)

    def test_a_burst_is_admitted_within_the_budget_and_the_rest_refused_retryably(self):
        self.start(self.budget)
        before = status_kib(self.server.proc.pid, "VmHWM") * 1024
        results = []
        threads = [threading.Thread(target=self.send, args=(results,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = status_kib(self.server.proc.pid, "VmHWM") * 1024

        admitted = [r for r in results if r[0] == "OK"]
        refused = [r for r in results if r[0] != "OK"]
        self.assertGreaterEqual(len(admitted), 1, results)
        self.assertGreaterEqual(len(refused), 1, "four requests of 915 MB cannot all fit 1 GiB")
        for code, details, trailers in refused:
            self.assertEqual(code, "RESOURCE_EXHAUSTED")
            self.assertIn("of the memory budget memory_budget_bytes = %d bytes" % self.budget,
                          details)
            self.assertEqual(trailers.get("rlscore-retryable"), "memory_budget_bytes")
        for _, wire, _ in admitted:
            self.check_answer(wire)

        # The admitted request's peak is within the budget, its own bytes included.
        bound = self.budget + (len(threads) - 1) * len(self.wire) + MARGIN
        print("\n  %d admitted, %d refused; request %d MB; server VmHWM %d MB before, %d MB after "
              "(bound %d MB)" % (len(admitted), len(refused), len(self.wire) >> 20, before >> 20,
                                 peak >> 20, bound >> 20))
        if not ARGS.sanitizer:
            self.assertLess(peak, bound)

        # Served again, the budget all free: a small call, then a large one alone.
        small = self.pb.ComputeAdvantagesRequest(rewards=[1.0, 0.0], group_sizes=[2])
        self.assertEqual(len(self.pb.ComputeAdvantagesResponse.FromString(
            self.call(small.SerializeToString(), timeout=60)).advantages), 2)
        self.check_answer(self.call(self.wire, timeout=600))
        metrics = self.server.metrics()
        self.assertIn('rlscore_admission_refusals_total{retryable="true"} %d' % len(refused),
                      metrics)
        self.assertRegex(metrics, r"rlscore_memory_in_use_bytes 0\n")

    def test_a_request_larger_than_the_whole_budget_is_refused_for_good(self):
        self.start(len(self.wire) // 2)
        with self.assertRaises(harness.grpc.RpcError) as raised:
            self.call(self.wire, timeout=600)
        self.assertEqual(raised.exception.code().name, "RESOURCE_EXHAUSTED")
        self.assertRegex(raised.exception.details(),
                         r"needs about \d+ bytes \(\d+ MiB\), more than the whole memory budget")
        self.assertNotIn("rlscore-retryable", dict(raised.exception.trailing_metadata() or ()))
        self.assertTrue(re.search(r'rlscore_admission_refusals_total\{retryable="false"\} 1',
                                  self.server.metrics()))


if __name__ == "__main__":
    harness.test_main(sys.modules[__name__])

#!/usr/bin/python3
"""End-to-end: the real `rlscore serve` binary, called over gRPC from Debian's Python.

health -> ComputeAdvantages -> SIGTERM while a call is being handled -> that call completes -> the
process exits 0. Run by ctest; standalone:

  /usr/bin/python3 tests/e2e/serve_test.py --binary build/cli/rlscore --stubs build/python
"""

import array
import os
import re
import signal
import struct
import subprocess
import sys
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (tests/e2e/harness.py)
from harness import health_status  # noqa: E402

ARGS = None


def start_server(*extra):
    """harness.RunningServer of the binary under test, with `extra` serve flags."""
    return harness.RunningServer(ARGS.binary, *extra)


class ServeTest(unittest.TestCase):

    def setUp(self):
        from rlscore.v1 import advantage_pb2, scoring_service_pb2_grpc  # noqa: generated at build
        self.pb = advantage_pb2
        self.server = start_server("--drain-timeout-secs=60")
        self.addCleanup(self.server.stop)
        self.channel = self.server.channel()
        self.stub = scoring_service_pb2_grpc.ScoringServiceStub(self.channel)

    def test_health_call_and_sigterm_during_a_call(self):
        # Health.
        self.assertEqual(health_status(self.channel), 1)
        self.assertEqual(health_status(self.channel, "rlscore.v1.ScoringService"), 1)

        # A call: the incident batch.
        rewards = [0.1] * (14 * 8) + [1.1, 0.1, 0.1, 1.1, 0.1, 0.1, 1.1, 0.1] * 2
        reply = self.stub.ComputeAdvantages(
            self.pb.ComputeAdvantagesRequest(rewards=rewards, group_sizes=[8] * 16), timeout=30)
        packed = struct.pack("<112d", *reply.advantages[:112])
        self.assertEqual(packed, b"\0" * (112 * 8), "clamped advantages must be bitwise +0.0")
        self.assertEqual(reply.summary.zero_variance_groups, 14)
        self.assertFalse(any(reply.groups.keep[:14]))
        self.assertTrue(all(reply.groups.keep[14:]))

        # ScoreGroups: perfect tags with a wrong answer earn nothing (the format gate); the
        # all-wrong group is zero-variance.
        from rlscore.v1 import scoring_pb2  # noqa: generated at build
        wrong = scoring_pb2.Group(references=["42"], completions=[
            scoring_pb2.Completion(text=("<think>careful</think> \\boxed{%d}" % v).encode(),
                                   num_tokens=2780) for v in (7, 8, 9, 10)])
        mixed = scoring_pb2.Group(references=["42"], completions=[
            scoring_pb2.Completion(text=("<think>6*7</think> \\boxed{%d}" % v).encode())
            for v in (42, 41)])
        scored = self.stub.ScoreGroups(scoring_pb2.ScoreGroupsRequest(groups=[wrong, mixed]),
                                       timeout=30)
        self.assertEqual(list(scored.rewards[:4]), [0.0] * 4)
        self.assertTrue(all(r.format_gated for r in scored.results[:4]))
        self.assertEqual(scored.groups.cause[0], self.pb.ZERO_VARIANCE_CAUSE_ALL_WRONG)
        self.assertAlmostEqual(scored.rewards[4], 1.1)
        self.assertEqual(len(scored.profile_hash), 16)

        # SIGTERM while a large call is being handled: it must complete, then the process exits 0.
        n = 8_000_000
        big = self.pb.ComputeAdvantagesRequest(group_sizes=[16] * (n // 16))
        big.rewards.extend(array.array("d", (float(i % 7) for i in range(n))))
        in_flight = 'rlscore_requests_in_flight{method="ComputeAdvantages"} 1'
        signalled = None
        for attempt in range(50):
            future = self.stub.ComputeAdvantages.future(big, timeout=120)
            while not future.done():
                if in_flight in self.server.metrics():
                    os.kill(self.server.proc.pid, signal.SIGTERM)
                    signalled = future
                    break
            if signalled:
                break
            future.result()  # finished before we saw it in flight: try again
        self.assertIsNotNone(signalled, "never observed the call in flight")
        print("SIGTERM sent during attempt %d" % (attempt + 1), file=sys.stderr)
        try:
            result = signalled.result()
        except grpc.RpcError:
            # Whether the server then exited 0 (the answer lost on the way out) or died tells
            # the two apart; its log is read after it ended.
            try:
                status = self.server.wait(90)
            except subprocess.TimeoutExpired:
                status = "still running after 90 s"
            print("server exit status: %s; server log:\n%s" % (status, self.server.log()),
                  file=sys.stderr)
            raise
        self.assertEqual(len(result.advantages), n)
        self.assertEqual(result.summary.groups, n // 16)
        self.assertEqual(self.server.wait(60), 0)
        self.assertIn("SIGTERM", self.server.log())
        self.assertIn("stopped", self.server.log())


class GpuTest(unittest.TestCase):
    """The server never depends on a GPU: it serves from the CPU and says so."""

    MISSING = "/nonexistent/librlscore_gpu.so"

    def test_auto_without_the_module_serves_from_the_cpu(self):
        from rlscore.v1 import advantage_pb2, scoring_service_pb2_grpc  # noqa: generated at build
        server = start_server("--gpu=auto", "--gpu-module=" + self.MISSING, "--gpu-min-rewards=1")
        self.addCleanup(server.stop)
        self.assertIn("GPU unavailable", server.log())
        self.assertIn(self.MISSING, server.log())
        channel = server.channel()
        reply = scoring_service_pb2_grpc.ScoringServiceStub(channel).ComputeAdvantages(
            advantage_pb2.ComputeAdvantagesRequest(rewards=[0.0, 1.0, 0.5, 0.5],
                                                   group_sizes=[2, 2]), timeout=30)
        self.assertEqual(reply.backend, "cpu")
        self.assertEqual(health_status(channel), 1)
        self.assertEqual(health_status(channel, "rlscore.gpu"), 2)  # NOT_SERVING: CPU only
        metrics = server.metrics()
        self.assertIn('rlscore_gpu_fallbacks_total{reason="unavailable"} 1', metrics)
        self.assertIn('rlscore_advantage_batches_total{backend="cpu"} 1', metrics)

    def test_the_module_next_to_the_binary_is_tried_by_default(self):
        module = os.path.join(os.path.dirname(os.path.abspath(ARGS.binary)), "librlscore_gpu.so")
        server = start_server()
        self.addCleanup(server.stop)
        if not os.path.exists(module):
            self.assertIn("GPU unavailable", server.log())  # built without CUDA
        elif "opened" not in server.log():
            # The module loads; CUDA itself says why no device opened (no driver, no GPU).
            self.assertRegex(server.log(), r"GPU unavailable \(no usable GPU \(cuda\w+: ")
        self.assertEqual(health_status(server.channel()), 1)

    def test_require_without_a_gpu_refuses_to_start_naming_why(self):
        run = subprocess.run([ARGS.binary, "serve", "--listen-address=127.0.0.1:0",
                              "--metrics-address=127.0.0.1:0", "--gpu=require",
                              "--gpu-module=" + self.MISSING],
                             capture_output=True, text=True, timeout=30)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("--gpu=require", run.stderr)
        self.assertIn(self.MISSING, run.stderr)


class RolloutWorkerTest(unittest.TestCase):
    """examples/rollout_worker.py against a real server: it is cut at the loop, not the end."""

    WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "rollout_worker.py")

    def run_worker(self, *extra):
        server = start_server()
        self.addCleanup(server.stop)
        run = subprocess.run(["/usr/bin/python3", self.WORKER,
                              "--server", "127.0.0.1:%d" % server.port, "--stubs", ARGS.stubs,
                              *extra], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stdout

    def test_a_looping_generation_is_stopped_and_cancelled_early(self):
        out = self.run_worker()
        m = re.search(r"STOP STOP_REASON_REPETITION_NGRAM at character (\d+) .* cancelled after "
                      r"(\d+) bytes", out)
        self.assertIsNotNone(m, out)
        stop_at, produced = int(m.group(1)), int(m.group(2))
        # The fourth occurrence of the reflection begins near character 1,100; the looping text
        # would run on to about 32,000 bytes. The generator was cancelled long before its end.
        self.assertLess(stop_at, 2000, out)
        self.assertLess(produced, 16000, out)

    def test_a_clean_generation_runs_to_its_end(self):
        self.assertIn("finished: no STOP", self.run_worker("--no-loop"))


class ProbeTest(unittest.TestCase):
    """--health-address and `rlscore health`: what a Kubernetes probe or a container check runs."""

    def health(self, *args):
        return subprocess.run([ARGS.binary, "health", *args], capture_output=True, text=True,
                              timeout=60)

    def test_the_probe_listener_and_the_health_command(self):
        server = start_server("--health-address=127.0.0.1:0")
        self.addCleanup(server.stop)
        probe = re.search(r"health checks on \S+ \(port (\d+)\)", server.log())
        self.assertIsNotNone(probe, server.log())
        address = "--address=127.0.0.1:" + probe.group(1)
        ok = self.health(address)
        self.assertEqual((ok.returncode, ok.stdout.strip()),
                         (0, "127.0.0.1:%s: SERVING" % probe.group(1)))
        # The API port answers too; the GPU is NOT_SERVING without a device.
        self.assertEqual(self.health("--address=" + server.address).returncode, 0)
        gpu = self.health(address, "--service=rlscore.gpu")
        self.assertEqual(gpu.returncode, 1)
        self.assertIn("NOT_SERVING", gpu.stdout)
        unknown = self.health(address, "--service=nope")
        self.assertEqual(unknown.returncode, 1)
        self.assertIn("service name unknown", unknown.stderr)

    def test_no_server_is_a_failure_within_the_timeout(self):
        done = self.health("--address=127.0.0.1:1", "--timeout-secs=1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("rlscore health: 127.0.0.1:1:", done.stderr)
        self.assertEqual(self.health("--timeout-secs=0").returncode, 2)


class DefaultsTest(unittest.TestCase):

    def test_print_config_shows_the_built_in_addresses(self):
        out = subprocess.run([ARGS.binary, "serve", "--print-config"], capture_output=True,
                             text=True, check=True).stdout
        self.assertIn('listen_address: "127.0.0.1:50051"', out)
        self.assertIn('metrics_address: "127.0.0.1:9464"', out)

    def test_bad_config_file_is_refused_with_its_line(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "rlscore-e2e-bad.textproto")
        with open(path, "w") as f:
            f.write('listen_address: "127.0.0.1:0"\nlimits { max_group_siz: 3 }\n')
        run = subprocess.run([ARGS.binary, "serve", "--config", path], capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(run.returncode, 2)
        self.assertIn(path + ":2:", run.stderr)
        os.unlink(path)


if __name__ == "__main__":
    harness.test_main(sys.modules[__name__])

#!/usr/bin/python3
"""The Python client (clients/python/rlscore_client) and its TRL and verl adapters, against the
real `rlscore serve` binary.

  /usr/bin/python3 tests/clients/python_client_test.py --binary build/cli/rlscore \\
      --stubs build/python -v

One server serves the module; tests that need other flags (a small --max-message-bytes, a config
file) start their own. Nothing sleeps: retries use an injected sleep and clock, and the stream
tests block their generators on events the test releases.
"""

import argparse
import array
import importlib.util
import math
import os
import random
import re
import socket
import sys
import tempfile
import threading
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = None
SERVER = None

# Filled in by main() once the stubs are on sys.path.
grpc = Client = RlscoreError = advantage_pb2 = monitor_pb2 = scoring_pb2 = None
rlscore_trl = rlscore_verl = splitting = harness = None

LOOP = "Wait, let me double check the previous step, but wait, consider another case. "
PREFIX = "<think>We need the smallest n. "
# Where the default loop rule stops PREFIX + LOOP * k: the prefix is 6 words and LOOP 13, so
# positions 19 on recur, and 60 % of the positions so far first recur at position 47 (29 of 48),
# the 4th occurrence of the 8-gram that starts at the loop's third word ("me").
LOOP_STOP = len(PREFIX + LOOP * 3 + "Wait, let ")


def setUpModule():
    global SERVER
    SERVER = harness.RunningServer(ARGS.binary)


def tearDownModule():
    SERVER.stop()


def start_server(test, *flags):
    """A server of its own for `test`, stopped when the test ends."""
    server = harness.RunningServer(ARGS.binary, *flags)
    test.addCleanup(server.stop)
    return server


def config_file(test, text):
    handle, path = tempfile.mkstemp(suffix=".textproto")
    with os.fdopen(handle, "w") as f:
        f.write(text)
    test.addCleanup(os.unlink, path)
    return path


def requests_total(server, method, code="OK"):
    """rlscore_requests_total{method,code} from the server's /metrics (0 before the first)."""
    for line in server.metrics().splitlines():
        if (line.startswith("rlscore_requests_total{") and 'method="%s"' % method in line and
                'code="%s"' % code in line):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def answer(value, reasoning="6*7"):
    return "<think>%s</think> \\boxed{%s}" % (reasoning, value)


def grpo(rewards):
    """GRPO advantages of one group in the server's arithmetic (group of < 8: one lane each)."""
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) * (r - mean) for r in rewards) / (len(rewards) - 1))
    return [(r - mean) * (1.0 / std) for r in rewards]


class ClientTestCase(unittest.TestCase):

    def setUp(self):
        self.client = Client(SERVER.address, timeout=30)
        self.addCleanup(self.client.close)


class ScoreGroupsTest(ClientTestCase):

    def test_a_correct_and_a_wrong_completion_get_rewards_and_advantages(self):
        reply = self.client.score_groups([{
            "prompt_id": "p1", "reference": "42",
            "completions": [{"text": answer(42), "num_tokens": 900, "finished": True},
                            {"text": answer(41), "num_tokens": 850, "finished": True}]}])
        self.assertEqual(list(reply.rewards), [1.1, 0.0])
        self.assertEqual(list(reply.advantages), grpo([1.1, 0.0]))
        self.assertEqual([r.verdict for r in reply.results],
                         [scoring_pb2.VERDICT_CORRECT, scoring_pb2.VERDICT_WRONG])
        self.assertEqual(reply.results[0].extracted_answer, "42")
        self.assertTrue(reply.results[1].format_gated)
        self.assertEqual(reply.results[0].num_tokens, 900)
        self.assertEqual(reply.summary.groups, 1)
        self.assertEqual(reply.summary.completions, 2)
        self.assertEqual(list(reply.groups.keep), [True])
        self.assertEqual(len(reply.profile_hash), 16)

    def test_an_all_wrong_group_is_clamped_to_exact_zeros(self):
        reply = self.client.score_groups([{"references": ["42"], "completions": [
            answer(v) for v in (7, 8, 9, 10)]}])
        self.assertEqual([math.copysign(1, a) for a in reply.advantages], [1.0] * 4)  # +0.0
        self.assertEqual(list(reply.advantages), [0.0] * 4)
        self.assertEqual(list(reply.groups.cause), [advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_WRONG])
        self.assertEqual(list(reply.groups.keep), [False])
        self.assertEqual(reply.summary.zero_variance_groups, 1)

    def test_dicts_and_messages_are_the_same_request(self):
        as_dicts = self.client.score_groups(
            [{"prompt_id": "p", "reference": "42", "task": "numeric",
              "completions": [answer(42), {"text": answer(40), "token_ids": [5, 6, 7]}]}],
            advantage={"estimator": "dr_grpo", "deviation": "population"})
        group = scoring_pb2.Group(prompt_id="p", references=["42"], task=scoring_pb2.TASK_NUMERIC,
                                  completions=[scoring_pb2.Completion(text=answer(42).encode()),
                                               scoring_pb2.Completion(text=answer(40).encode(),
                                                                      token_ids=[5, 6, 7])])
        as_messages = self.client.score_groups(
            [group], advantage=advantage_pb2.AdvantageOptions(
                estimator=advantage_pb2.ESTIMATOR_DR_GRPO,
                deviation=advantage_pb2.DEVIATION_POPULATION))
        self.assertEqual(as_dicts, as_messages)
        self.assertEqual(list(as_dicts.advantages), [1.1 - 0.55, 0.0 - 0.55])  # Dr. GRPO: r - mean
        self.assertEqual(as_dicts.results[1].num_tokens, 3)  # the token ids are the length
        self.assertFalse(as_dicts.results[1].tokens_estimated)

    def test_external_accuracy_and_unicode_text(self):
        reply = self.client.score_groups([{"task": "external", "completions": [
            {"text": "<think>π ≈ 3.14159</think> sandbox: passed", "external_accuracy": 1.0},
            {"text": "<think>π</think> sandbox: failed", "external_accuracy": 0.0}]}])
        self.assertEqual([r.components.accuracy for r in reply.results], [1.0, 0.0])

    def test_an_unknown_key_is_refused_before_sending(self):
        with self.assertRaisesRegex(ValueError, r"groups\[0\]\.completions\[0\]: unknown key\(s\) "
                                                r"num_token"):
            self.client.score_groups([{"reference": "1", "completions": [{"num_token": 5}]}])
        with self.assertRaisesRegex(ValueError, r"groups\[0\]\.task: unknown value 'algebra'"):
            self.client.score_groups([{"task": "algebra", "completions": ["x"]}])

    def test_a_client_is_shared_by_threads(self):
        results = [None] * 8

        def work(i):
            results[i] = [list(self.client.score_groups([{"reference": str(i), "completions": [
                answer(i), answer(i + 1)]}]).rewards) for _ in range(3)]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [[[1.1, 0.0]] * 3] * 8)


class ComputeAdvantagesTest(ClientTestCase):

    REWARDS = [0.1, 0.1, 0.1, 0.1, 1.1, 0.1, 1.1, 0.1]

    def test_lists_and_arrays(self):
        reply = self.client.compute_advantages(self.REWARDS, [4, 4])
        self.assertEqual(list(reply.advantages[:4]), [0.0] * 4)
        self.assertEqual(list(reply.groups.cause),
                         [advantage_pb2.ZERO_VARIANCE_CAUSE_IDENTICAL_REWARDS,
                          advantage_pb2.ZERO_VARIANCE_CAUSE_NONE])
        self.assertEqual(list(reply.groups.keep), [False, True])
        self.assertAlmostEqual(reply.advantages[4], 0.8660254037844387, places=15)
        packed = self.client.compute_advantages(array.array("d", self.REWARDS),
                                                array.array("I", [4, 4]))
        self.assertEqual(packed, reply)

    def test_outcomes_and_options(self):
        reply = self.client.compute_advantages(
            [1.0, 0.0, 5.0, 0.0, 0.0], [3, 2],
            outcomes=["correct", "wrong", "unscorable", advantage_pb2.OUTCOME_WRONG, "wrong"],
            estimator="rloo", zero_variance_threshold=0.0)
        self.assertEqual(list(reply.groups.scorable), [2, 2])
        self.assertEqual(reply.advantages[2], 0.0)  # unscorable: left out, advantage 0
        self.assertEqual(list(reply.advantages[:2]), [(1.0 - 0.5) * 2.0, (0.0 - 0.5) * 2.0])
        self.assertEqual(list(reply.groups.cause)[1], advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_WRONG)
        self.assertEqual(reply.summary.unscorable, 1)


class ScoreTest(ClientTestCase):

    def test_aggregate_with_pass_at_k(self):
        items = ([{"prompt_id": "a", "completion": answer(v), "reference": "1"}
                  for v in (1, 1, 1, 2)] +
                 [{"prompt_id": "b", "completion": answer(v), "references": ["7"]}
                  for v in (3, 4)] +
                 [{"completion": answer(5), "reference": "5"}])  # a prompt of its own
        reply = self.client.score(items, pass_at_k=[2, 1])
        agg = reply.aggregate
        self.assertEqual(agg.items, 7)
        self.assertEqual(agg.accuracy, 4 / 7)
        self.assertEqual(list(agg.verdicts), [0, 4, 3, 0, 0, 0])
        self.assertEqual([(p.k, p.prompts) for p in agg.pass_at_k], [(1, 3), (2, 2)])
        # pass@1: (1 anonymous correct + 3/4 + 0/2) / 3 prompts; pass@2: (1 - 0 + 0) / 2.
        self.assertAlmostEqual(agg.pass_at_k[0].value, (1.0 + 0.75 + 0.0) / 3, places=15)
        self.assertEqual(agg.pass_at_k[1].value, 0.5)
        self.assertEqual(list(reply.rewards), [1.1, 1.1, 1.1, 0.0, 0.0, 0.0, 1.1])


class MonitorGenerationTest(ClientTestCase):

    class BlockingGeneration:
        """Text deltas of 16 characters; after `block_at` characters the generation waits for
        `release` (set by the test), as an engine would while the monitor answers."""

        def __init__(self, text, block_at):
            self.text, self.block_at = text, block_at
            self.release = threading.Event()
            self.pulled = 0

        def __iter__(self):
            for at in range(0, len(self.text), 16):
                if at >= self.block_at:
                    self.release.wait(60)
                self.pulled += 1
                yield self.text[at:at + 16]

    def test_a_looping_text_is_stopped_where_score_groups_reports_the_loop(self):
        text = PREFIX + LOOP * 400 + "</think> \\boxed{42}"
        block_at = 16 * math.ceil(len(PREFIX + LOOP * 6) / 16)
        generation = self.BlockingGeneration(text, block_at)
        self.addCleanup(generation.release.set)
        stop = self.client.monitor_generation(generation, max_tokens=16384)
        # It returned without waiting for the blocked generation, which was not advanced once
        # the STOP (for a loop that began in a delta already pulled) had arrived.
        self.assertFalse(generation.release.is_set())
        self.assertLessEqual(generation.pulled, block_at // 16)
        self.assertEqual(stop.reason, monitor_pb2.STOP_REASON_REPETITION_NGRAM)
        self.assertEqual(stop.char_offset, LOOP_STOP)
        self.assertGreater(16 * generation.pulled, stop.char_offset)
        batch = self.client.score_groups([{"reference": "42", "completions": [text]}])
        self.assertEqual(stop.char_offset, batch.results[0].repetition.char_offset)

    def test_token_ids_are_stopped_at_the_fourth_occurrence(self):
        ids = [list(range(100, 110))] * 10
        stop = self.client.monitor_generation(ids)
        self.assertEqual(stop.reason, monitor_pb2.STOP_REASON_REPETITION_NGRAM)
        self.assertEqual(stop.token_offset, 30)
        batch = self.client.score_groups([{"reference": "1", "completions": [
            {"text": "x", "token_ids": sum(ids, [])}]}])
        self.assertEqual(batch.results[0].repetition.token_offset, 30)

    def test_the_token_budget_stops_a_generation(self):
        stop = self.client.monitor_generation(([i] for i in range(100)), max_tokens=5)
        self.assertEqual(stop.reason, monitor_pb2.STOP_REASON_TOKEN_BUDGET)
        self.assertEqual(stop.token_offset, 5)

    def test_a_clean_short_generation_gets_no_stop(self):
        clean = iter(["<think>2+2", "</think> \\boxed{4}"])
        self.assertIsNone(self.client.monitor_generation(clean))

    def test_an_error_of_the_iterator_is_raised_here(self):
        def deltas():
            yield "<think>fine so far"
            raise KeyError("the engine failed")

        with self.assertRaisesRegex(KeyError, "the engine failed"):
            self.client.monitor_generation(deltas())

    def test_a_server_error_is_an_rlscore_error(self):
        with self.assertRaises(RlscoreError) as raised:
            self.client.monitor_generation(["text", [1, 2, 3]])  # text and ids mixed
        self.assertEqual(raised.exception.code, grpc.StatusCode.INVALID_ARGUMENT)

    def test_the_deadline_covers_the_whole_generation(self):
        generation = self.BlockingGeneration(PREFIX + "thinking", block_at=16)
        self.addCleanup(generation.release.set)
        with self.assertRaises(RlscoreError) as raised:
            self.client.monitor_generation(generation, timeout=0.2)
        self.assertEqual(raised.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)

    def test_a_pushed_generation_returns_the_stop_once_it_has_arrived(self):
        text = PREFIX + LOOP * 8
        with self.client.generation_monitor(max_tokens=16384) as monitor:
            for at in range(0, len(text), 16):
                monitor.push(text[at:at + 16])
            stop = monitor.wait(30)
            self.assertIsNotNone(stop)
            self.assertIs(monitor.stop, stop)
            self.assertIs(monitor.push(LOOP), stop)  # nothing more is sent
        self.assertEqual(stop.char_offset, LOOP_STOP)

    def test_a_pushed_clean_generation_closes_without_a_stop(self):
        monitor = self.client.generation_monitor()
        self.assertIsNone(monitor.push("<think>short</think>"))
        self.assertIsNone(monitor.push(" \\boxed{1}"))
        self.assertIsNone(monitor.close(30))
        with self.assertRaises(ValueError):
            monitor.push("more")


class ErrorsTest(ClientTestCase):

    def test_a_nan_reward_names_the_group_and_position(self):
        slept = []
        client = Client(SERVER.address, sleep=slept.append)
        self.addCleanup(client.close)
        with self.assertRaises(RlscoreError) as raised:
            client.compute_advantages([0.1, 0.2, 0.3, 0.4, float("nan")], [3, 2])
        e = raised.exception
        self.assertEqual(e.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(e.message.startswith("reward at group 1, position 1 (flat index 4) is NaN"),
                        e.message)
        self.assertEqual(str(e), "INVALID_ARGUMENT: " + e.message)
        self.assertEqual((e.attempts, slept), (1, []))  # never retried

    def test_an_unknown_profile_is_not_found(self):
        with self.assertRaises(RlscoreError) as raised:
            self.client.score_groups([{"reference": "1", "completions": ["x"]}],
                                     profile="no-such-profile")
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn('profile "no-such-profile" is not configured', raised.exception.message)

    def test_unavailable_is_retried_with_exponential_backoff(self):
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        self.addCleanup(closed.close)
        slept = []
        client = Client("127.0.0.1:%d" % closed.getsockname()[1], retries=4, backoff=0.1,
                        max_backoff=0.3, sleep=slept.append, rand=lambda: 0.5)
        self.addCleanup(client.close)
        with self.assertRaises(RlscoreError) as raised:
            client.compute_advantages([1.0, 2.0], [2])
        self.assertEqual(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(raised.exception.attempts, 5)
        # Caps 0.1, 0.2, 0.3, 0.3 (max_backoff); equal jitter with u = 0.5: 3/4 of each.
        self.assertEqual(slept, [0.1 / 2 + 0.5 * 0.1 / 2, 0.2 / 2 + 0.5 * 0.2 / 2,
                                 0.3 / 2 + 0.5 * 0.3 / 2, 0.3 / 2 + 0.5 * 0.3 / 2])

    def test_a_busy_servers_refusal_is_retried_with_backoff(self):
        # The first two calls are refused as a server whose memory budget is held refuses them;
        # the third reaches the server.
        proxy = harness.RefusingProxy(SERVER.address, refusals=2)
        self.addCleanup(proxy.stop)
        slept = []
        client = Client(proxy.address, retries=4, backoff=0.1, sleep=slept.append,
                        rand=lambda: 0.5)
        self.addCleanup(client.close)
        reply = client.compute_advantages([1.0, 0.0], [2])
        self.assertEqual(len(reply.advantages), 2)
        self.assertEqual(proxy.calls, 3)
        self.assertEqual(slept, [0.1 / 2 + 0.5 * 0.1 / 2, 0.2 / 2 + 0.5 * 0.2 / 2])

    def test_a_limit_the_request_exceeds_is_not_retried(self):
        # RESOURCE_EXHAUSTED without the retryable trailer: the request itself is over a limit.
        proxy = harness.RefusingProxy(SERVER.address, refusals=1, retryable=False)
        self.addCleanup(proxy.stop)
        slept = []
        client = Client(proxy.address, retries=4, sleep=slept.append)
        self.addCleanup(client.close)
        with self.assertRaises(RlscoreError) as raised:
            client.compute_advantages([1.0, 0.0], [2])
        self.assertEqual(raised.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(raised.exception.attempts, 1)
        self.assertEqual((proxy.calls, slept), (1, []))

    def test_a_call_larger_than_the_whole_budget_is_refused_for_good(self):
        # A server whose memory budget one small call exceeds: the refusal names the budget and
        # carries no retryable trailer (tests/e2e/admission_test.py has the retryable ones).
        server = start_server(self, "--memory-budget-bytes=1000")
        compute = server.channel().unary_unary(
            "/rlscore.v1.ScoringService/ComputeAdvantages",
            request_serializer=advantage_pb2.ComputeAdvantagesRequest.SerializeToString,
            response_deserializer=advantage_pb2.ComputeAdvantagesResponse.FromString)
        with self.assertRaises(grpc.RpcError) as raised:
            compute(advantage_pb2.ComputeAdvantagesRequest(rewards=[0.5] * 100,
                                                           group_sizes=[100]), timeout=10)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("more than the whole memory budget memory_budget_bytes = 1000",
                      raised.exception.details())
        self.assertNotIn("rlscore-retryable", dict(raised.exception.trailing_metadata()))

    def test_retries_stop_at_the_deadline(self):
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        self.addCleanup(closed.close)
        now = [1000.0]
        slept = []

        def sleep(seconds):
            slept.append(seconds)
            now[0] += seconds

        client = Client("127.0.0.1:%d" % closed.getsockname()[1], timeout=0.35, retries=10,
                        backoff=0.1, sleep=sleep, clock=lambda: now[0], rand=lambda: 1.0)
        self.addCleanup(client.close)
        with self.assertRaises(RlscoreError) as raised:
            client.score([{"completion": "x", "reference": "1"}])
        # Waits 0.1 and 0.2 fit in 0.35 s; the third, 0.4, would end past the deadline.
        self.assertEqual(slept, [0.1, 0.2])
        self.assertEqual(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(raised.exception.attempts, 3)
        self.assertIn("the deadline would pass", raised.exception.message)

    def test_an_expired_deadline_is_deadline_exceeded(self):
        with self.assertRaises(RlscoreError) as raised:
            self.client.score_groups([{"reference": "1", "completions": ["x"]}], timeout=1e-6)
        self.assertEqual(raised.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)

    def test_a_unix_socket_target(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, directory)
        path = os.path.join(directory, "rlscore.sock")
        server = start_server(self, "--listen-address=unix:" + path)
        self.addCleanup(lambda: os.path.exists(path) and os.unlink(path))
        client = Client("unix:" + path)
        self.addCleanup(client.close)
        self.assertEqual(list(client.compute_advantages([1.0, 3.0], [2]).advantages),
                         grpo([1.0, 3.0]))
        self.assertEqual(server.address, "unix:" + path)


def split_groups():
    """Groups of every kind (correct/wrong mixes, clamped, singleton, unscorable, token ids),
    each completion a few hundred bytes so that requests outweigh responses."""
    rng = random.Random(8)
    groups = []
    for g in range(14):
        reference = str(rng.randint(2, 99))
        completions = []
        for i in range(rng.randint(1, 4)):
            value = reference if (g + i) % 3 else str(int(reference) + 1)
            filler = " ".join(rng.choice(["so", "then", "x", "sum", "is", "odd", "check"])
                              for _ in range(rng.randint(40, 90)))
            completion = {"text": answer(value, filler), "num_tokens": rng.randint(100, 6000),
                          "finished": rng.random() < 0.8}
            if i == 1:
                completion = {"text": completion["text"],
                              "token_ids": [rng.randint(0, 50) for _ in range(30)]}
            completions.append(completion)
        if g == 4:
            completions = [answer(reference, "short")] * 3  # identical rewards
        groups.append({"prompt_id": "p%d" % g, "completions": completions,
                       "reference": "\\frac{" if g == 6 else reference})  # g 6: unscorable
    return groups


class SplittingTest(unittest.TestCase):
    """Requests over max_request_bytes are sent in chunks to a server that refuses anything over
    the same limit, and the merged answer equals the unsplit one."""

    LIMIT = 4096

    @classmethod
    def setUpClass(cls):
        cls.small = harness.RunningServer(ARGS.binary, "--max-message-bytes=%d" % cls.LIMIT)
        cls.whole = Client(SERVER.address)
        cls.split = Client(cls.small.address, max_request_bytes=cls.LIMIT)

    @classmethod
    def tearDownClass(cls):
        cls.whole.close()
        cls.split.close()
        cls.small.stop()

    def assertMerged(self, merged, whole, approx=()):
        """Field by field equal; `approx` fields (dotted) to 1e-12 relative, the rest exact."""
        merged_copy, whole_copy = type(merged)(), type(whole)()
        merged_copy.CopyFrom(merged)
        whole_copy.CopyFrom(whole)
        for dotted in approx:
            parent, name = dotted.rsplit(".", 1)
            a, b = merged_copy, whole_copy
            for part in parent.split("."):
                a, b = getattr(a, part), getattr(b, part)
            self.assertAlmostEqual(getattr(a, name), getattr(b, name),
                                   delta=1e-12 * abs(getattr(b, name)), msg=dotted)
            setattr(a, name, 0.0)
            setattr(b, name, 0.0)
        self.assertEqual(merged_copy, whole_copy)

    def count(self, method, body):
        before = requests_total(self.small, method)
        result = body()
        return result, requests_total(self.small, method) - before

    def test_score_groups(self):
        groups = split_groups()
        whole = self.whole.score_groups(groups, run_id="split-run", step=3)
        merged, rpcs = self.count("ScoreGroups", lambda: self.split.score_groups(
            groups, run_id="split-run", step=3))
        self.assertGreaterEqual(rpcs, 3)
        self.assertEqual(merged.summary.groups, 14)
        self.assertIn(scoring_pb2.VERDICT_UNPARSEABLE_REFERENCE,
                      [r.verdict for r in merged.results])
        self.assertGreater(merged.summary.zero_variance_groups, 0)
        self.assertMerged(merged, whole, approx=("summary.reward_mean", "summary.reward_std"))
        # Each chunk was recorded for step 3, and each replaced the one before (the server keeps
        # one batch per step): the step is represented by its last chunk.
        health = self.split.run_health("split-run").runs[0]
        self.assertEqual((health.batches, health.last_step), (1, 3))

    def test_compute_advantages(self):
        rng = random.Random(3)
        sizes = [rng.randint(1, 16) for _ in range(120)]
        rewards = [rng.choice([0.0, 0.1, 1.1, rng.random()]) for _ in range(sum(sizes))]
        outcomes = [rng.choice(["unknown", "correct", "wrong", "truncated", "unscorable"])
                    for _ in rewards]
        whole = self.whole.compute_advantages(rewards, sizes, outcomes=outcomes)
        merged, rpcs = self.count("ComputeAdvantages", lambda: self.split.compute_advantages(
            rewards, sizes, outcomes=outcomes))
        self.assertGreaterEqual(rpcs, 3)
        self.assertMerged(merged, whole, approx=("summary.reward_mean", "summary.reward_std"))
        for estimator in ("grpo", "dr_grpo", "rloo"):
            self.assertMerged(
                self.split.compute_advantages(rewards, sizes, estimator=estimator,
                                              deviation="population"),
                self.whole.compute_advantages(rewards, sizes, estimator=estimator,
                                              deviation="population"),
                approx=("summary.reward_mean", "summary.reward_std"))

    def test_score(self):
        rng = random.Random(5)
        items = []
        for i in range(48):
            reference = str(i % 5)
            value = reference if rng.random() < 0.6 else "9"
            filler = " ".join(rng.choice(["alpha", "beta", "gamma", "so"])
                              for _ in range(rng.randint(30, 70)))
            items.append({"prompt_id": "" if i % 7 == 0 else "q%d" % (i % 5),
                          "completion": {"text": answer(value, filler),
                                         "num_tokens": rng.randint(10, 20000)},
                          "reference": "\\sqrt{" if i == 11 else reference})
        ks = [1, 2, 3, 8]
        whole = self.whole.score(items, pass_at_k=ks)
        merged, rpcs = self.count("Score", lambda: self.split.score(items, pass_at_k=ks))
        self.assertGreaterEqual(rpcs, 3)
        self.assertMerged(merged, whole)  # the aggregate too, exactly

    def test_the_batch_normalised_estimator_is_not_split(self):
        with self.assertRaises(RlscoreError) as raised:
            self.count("ComputeAdvantages", lambda: self.split.compute_advantages(
                [0.5] * 1000, [10] * 100, estimator="batch_normalized"))
        self.assertEqual(raised.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("batch-normalised", raised.exception.message)
        _, rpcs = self.count("ScoreGroups", lambda: self.assertRaisesRegex(
            RlscoreError, "batch-normalised", self.split.score_groups, split_groups(),
            advantage={"estimator": "batch_normalized"}))
        self.assertEqual(rpcs, 0)
        # REINFORCE++-baseline and GDPO whiten over the whole batch too; pass@k is per group.
        for estimator in ("reinforce_pp_baseline", "gdpo"):
            extra = {"components": [[0.5, 1.0]] * 1000} if estimator == "gdpo" else {}
            _, rpcs = self.count("ComputeAdvantages", lambda: self.assertRaisesRegex(
                RlscoreError, "ESTIMATOR_", self.split.compute_advantages, [0.5] * 1000,
                [10] * 100, estimator=estimator, **extra))
            self.assertEqual(rpcs, 0, estimator)
        rewards = [float(i % 3) for i in range(1000)]
        whole = self.whole.compute_advantages(rewards, [10] * 100, estimator="grpo_passk",
                                              accuracy=[r / 2 for r in rewards],
                                              keep_band=(0.2, 0.8))
        merged, rpcs = self.count("ComputeAdvantages", lambda: self.split.compute_advantages(
            rewards, [10] * 100, estimator="grpo_passk", accuracy=[r / 2 for r in rewards],
            keep_band=(0.2, 0.8)))
        self.assertGreaterEqual(rpcs, 2)
        self.assertEqual(list(merged.advantages), list(whole.advantages))
        self.assertEqual(list(merged.groups.keep), list(whole.groups.keep))

    def test_a_group_over_the_limit_is_named(self):
        groups = split_groups()
        groups[2]["completions"].append(answer(1, "long " * 1000))
        with self.assertRaises(RlscoreError) as raised:
            self.split.score_groups(groups)
        self.assertEqual(raised.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("groups[2] alone needs", raised.exception.message)

    def test_the_servers_limit_is_resource_exhausted(self):
        client = Client(self.small.address)  # default max_request_bytes: far above 4 KiB
        self.addCleanup(client.close)
        with self.assertRaises(RlscoreError) as raised:
            client.score_groups(split_groups())
        self.assertEqual(raised.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_an_error_in_a_later_chunk_says_where_that_chunk_starts(self):
        rewards = [0.5] * 1000
        rewards[990] = float("inf")
        with self.assertRaises(RlscoreError) as raised:
            self.split.compute_advantages(rewards, [10] * 100)
        e = raised.exception
        self.assertEqual(e.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIsNotNone(e.chunk_offset)
        group, position = map(int, re.match(r"reward at group (\d+), position (\d+)",
                                            e.message).groups())
        self.assertEqual((e.chunk_offset + group, position), (99, 0))


class SplitArithmeticTest(unittest.TestCase):
    """The pure parts of splitting, without a server."""

    def test_chunk_plans(self):
        cases = [  # costs, budgets, plan
            ([], (10,), [(0, 0)]),
            ([(10,)], (10,), [(0, 1)]),
            ([(4,), (6,), (1,)], (10,), [(0, 2), (2, 3)]),
            ([(3,)] * 7, (9,), [(0, 3), (3, 6), (6, 7)]),
            ([(1, 9), (1, 2), (8, 1)], (10, 10), [(0, 1), (1, 3)]),  # the second budget splits
        ]
        for costs, budgets, plan in cases:
            with self.subTest(costs=costs, budgets=budgets):
                self.assertEqual(splitting.plan_chunks(costs, budgets, "groups"), plan)
        with self.assertRaisesRegex(RlscoreError, r"groups\[1\] alone needs 11 bytes"):
            splitting.plan_chunks([(1,), (11,)], (10,), "groups")

    def test_merged_summaries_match_two_pass_moments_of_the_whole_batch(self):
        rng = random.Random(1)
        for trial in range(200):
            rewards = [rng.choice([0.0, 1.1, rng.uniform(-3, 3)])
                       for _ in range(rng.randint(1, 40))]
            cuts = sorted(rng.sample(range(1, len(rewards)), rng.randint(0, len(rewards) - 1)))
            parts = [rewards[a:b] for a, b in zip([0] + cuts, cuts + [len(rewards)])]
            for deviation in (advantage_pb2.DEVIATION_SAMPLE, advantage_pb2.DEVIATION_POPULATION):
                summaries = []
                for part in parts:
                    mean = sum(part) / len(part)
                    m2 = sum((r - mean) ** 2 for r in part)
                    d = len(part) - (deviation == advantage_pb2.DEVIATION_SAMPLE)
                    summaries.append(advantage_pb2.BatchSummary(
                        groups=1, completions=len(part), reward_mean=mean,
                        reward_std=math.sqrt(m2 / d) if len(part) > 1 else 0.0))
                merged = splitting.merge_summaries(summaries, deviation)
                mean = sum(rewards) / len(rewards)
                d = len(rewards) - (deviation == advantage_pb2.DEVIATION_SAMPLE)
                std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / d) if d else 0.0
                with self.subTest(trial=trial, deviation=deviation):
                    self.assertAlmostEqual(merged.reward_mean, mean, delta=1e-12)
                    self.assertAlmostEqual(merged.reward_std, std, delta=1e-12)
                    self.assertEqual(merged.groups, len(parts))

    def test_percentiles_are_nearest_rank(self):
        for values, q, expected in [([], 0.5, 0.0), ([7], 0.99, 7.0), ([1, 2, 3, 4], 0.5, 2.0),
                                    ([1, 2, 3, 4], 0.51, 3.0), (list(range(1, 101)), 0.9, 90.0),
                                    ([5, 9], 0.0, 5.0)]:
            self.assertEqual(splitting.percentile(values, q), expected, (values, q))


class ServerDefaultsTest(unittest.TestCase):
    """Splitting when the request leaves the deviation or the estimator to the server."""

    def server_and_clients(self, config):
        server = start_server(self, "--config=" + config_file(self, config))
        whole, split = Client(server.address), Client(server.address, max_request_bytes=3072)
        self.addCleanup(whole.close)
        self.addCleanup(split.close)
        return server, whole, split

    def test_the_configured_deviation_is_found_from_the_responses(self):
        _, whole, split = self.server_and_clients("advantage { deviation: DEVIATION_POPULATION }")
        rng = random.Random(11)
        sizes = [rng.randint(2, 8) for _ in range(80)]
        rewards = [rng.random() for _ in range(sum(sizes))]
        unsplit = whole.compute_advantages(rewards, sizes)
        merged = split.compute_advantages(rewards, sizes)
        n = len(rewards)
        sample_std = unsplit.summary.reward_std * math.sqrt(n / (n - 1))
        self.assertGreater(abs(sample_std - unsplit.summary.reward_std), 1e-6)
        self.assertAlmostEqual(merged.summary.reward_std, unsplit.summary.reward_std, delta=1e-14)
        groups = split_groups()
        self.assertAlmostEqual(split.score_groups(groups).summary.reward_std,
                               whole.score_groups(groups).summary.reward_std, delta=1e-14)

    def test_a_batch_normalised_default_is_refused_after_the_first_chunk(self):
        server, _, split = self.server_and_clients(
            "advantage { estimator: ESTIMATOR_BATCH_NORMALIZED }")
        rng = random.Random(12)
        with self.assertRaisesRegex(RlscoreError, "the server's default estimator is "
                                                  "batch-normalised"):
            split.compute_advantages([rng.random() for _ in range(400)], [4] * 100)
        self.assertEqual(requests_total(server, "ComputeAdvantages"), 1)
        with self.assertRaisesRegex(RlscoreError, "the profile's default estimator"):
            split.score_groups(split_groups())


class TrlRewardTest(ClientTestCase):

    def reward(self, **options):
        return rlscore_trl.RlscoreReward(self.client, **options)

    def test_plain_completions_grouped_by_prompt(self):
        reward = self.reward(run_id="trl-run")
        self.assertEqual(reward.__name__, "rlscore")
        prompts = ["What is 6*7?"] * 3 + ["What is 3+4?"] * 2
        completions = [answer(42), answer(41), answer(42), answer(7), answer(8)]
        rewards = reward(prompts=prompts, completions=completions,
                         solution=["42"] * 3 + ["7"] * 2, level=[1] * 5,
                         trainer_state=types.SimpleNamespace(global_step=5))
        self.assertEqual(rewards, [1.1, 0.0, 1.1, 1.1, 0.0])
        self.assertEqual(reward.last_response.summary.groups, 2)
        self.assertEqual(list(reward.last_response.groups.scorable), [3, 2])
        health = self.client.run_health("trl-run").runs[0]
        self.assertEqual((health.last_step, health.batches), (5, 1))

    def test_conversational_completions(self):
        reward = self.reward(name="math_reward")
        self.assertEqual(reward.__name__, "math_reward")
        prompts = [[{"role": "user", "content": "6*7?"}]] * 2
        completions = [[{"role": "assistant", "content": answer(42)}],
                       [{"role": "assistant", "content": [{"type": "text", "text": answer(40)}]}]]
        self.assertEqual(reward(prompts=prompts, completions=completions, answer=["42", "42"]),
                         [1.1, 0.0])

    def test_completion_ids_are_the_token_ids(self):
        reward = self.reward(max_completion_length=8)
        ids = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10, 11]]
        reward(prompts=["p", "p"], completions=[answer(1), answer(1)], completion_ids=ids,
               ground_truth=["1", "1"])
        results = reward.last_response.results
        self.assertEqual([r.num_tokens for r in results], [3, 8])
        self.assertEqual([r.tokens_estimated for r in results], [False, False])
        self.assertEqual([r.anatomy.truncated for r in results], [False, True])  # hit the max

    def test_the_reference_column(self):
        kwargs = {"prompts": ["p"] * 2, "completions": [answer(5), answer(6)]}
        self.assertEqual(self.reward()(answer=["6", "6"], reference=["5", "5"], **kwargs),
                         [0.0, 1.1])  # "answer" comes before "reference"
        self.assertEqual(self.reward(reference_column="gold")(gold=[["5", "five"]] * 2, **kwargs),
                         [1.1, 0.0])
        with self.assertRaisesRegex(ValueError, "no reference column"):
            self.reward()(question=["q", "q"], **kwargs)

    def test_an_unscorable_verdict_is_none(self):
        rewards = self.reward()(prompts=["p", "p", "q"], completions=[answer(1)] * 3,
                                solution=["\\frac{", "\\frac{", "1"])
        self.assertEqual(rewards, [None, None, 1.1])


class VerlScoreTest(unittest.TestCase):

    def setUp(self):
        self.environ = dict(os.environ)
        os.environ["RLSCORE_TARGET"] = SERVER.address
        os.environ.pop("RLSCORE_PROFILE", None)
        rlscore_verl.reset_shared_client()
        self.addCleanup(self.restore)

    def restore(self):
        rlscore_verl.reset_shared_client()
        os.environ.clear()
        os.environ.update(self.environ)

    def test_compute_score(self):
        result = rlscore_verl.compute_score("openai/gsm8k", answer(42), "42",
                                            extra_info={"index": 3})
        self.assertEqual(result, {"score": 1.1, "accuracy": 1.0, "format": 0.1, "repetition": 0.0,
                                  "length": 0.0, "num_tokens": result["num_tokens"],
                                  "truncated": 0.0, "format_gated": 0.0, "unscorable": 0.0})
        self.assertEqual(rlscore_verl.compute_score("math", answer(7), ["seven", "7.0"])["score"],
                         1.1)

    def test_compute_score_batch(self):
        results = rlscore_verl.compute_score_batch(
            data_sources=["math"] * 3, solution_strs=[answer(1), answer(2), answer(3)],
            ground_truths=["1", ["3", "x"], "\\frac{"], extra_infos=[None] * 3)
        self.assertEqual([r["score"] for r in results], [1.1, 0.0, 0.0])
        self.assertEqual([r["format_gated"] for r in results], [0.0, 1.0, 0.0])
        self.assertEqual([r["unscorable"] for r in results], [0.0, 0.0, 1.0])
        self.assertEqual({frozenset(r) for r in results}, {frozenset(results[0])})

    def test_the_environment_configures_one_client_per_process(self):
        first, profile = rlscore_verl.shared_client()
        self.assertEqual((first.target, profile), (SERVER.address, ""))
        rlscore_verl.compute_score("math", answer(1), "1")
        self.assertIs(rlscore_verl.shared_client()[0], first)
        os.environ["RLSCORE_PROFILE"] = "no-such-profile"
        rlscore_verl.compute_score("math", answer(1), "1")  # still the first client's profile
        rlscore_verl.reset_shared_client()
        with self.assertRaisesRegex(RlscoreError, 'NOT_FOUND: profile "no-such-profile"'):
            rlscore_verl.compute_score("math", answer(1), "1")

    def test_loaded_by_path_as_verl_does(self):
        path = os.path.join(ROOT, "clients", "python", "rlscore_client", "verl.py")
        spec = importlib.util.spec_from_file_location("custom_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.addCleanup(module.reset_shared_client)
        self.assertEqual(module.compute_score_batch(["m"], [answer(2)], ["2"])[0]["score"], 1.1)


class ReplicasTest(unittest.TestCase):
    """Several replicas: targets, round robin, cool-off, stickiness, the retry budget and
    failover with real servers (tests/e2e/replicas_test.py kills them under load)."""

    class FakeChannel:
        def __init__(self, address):
            self.address, self.closed = address, False

        def close(self):
            self.closed = True

    def replicas(self, target, now, addresses=("10.0.0.1", "10.0.0.2", "10.0.0.3")):
        from rlscore_client import _replicas
        resolved = list(addresses)

        def resolve(host, port, type=None):  # noqa: A002 - getaddrinfo's keyword
            self.assertEqual(host, "rlscore-headless.rl.svc")
            return [(socket.AF_INET, type, 6, "", (a, port)) for a in resolved]

        made = _replicas.Replicas(target, self.FakeChannel, lambda c: c.address,
                                  clock=lambda: now[0], resolve=resolve, resolve_interval=30)
        return made, resolved

    def test_targets(self):
        from rlscore_client._replicas import split_targets
        self.assertEqual(split_targets("a:1"), ["a:1"])
        self.assertEqual(split_targets("a:1, b:2,"), ["a:1", "b:2"])
        self.assertEqual(split_targets(["a:1", "unix:/s"]), ["a:1", "unix:/s"])
        self.assertEqual(split_targets("ipv4:1.2.3.4:5,1.2.3.5:5"), ["ipv4:1.2.3.4:5,1.2.3.5:5"])
        with self.assertRaises(ValueError):
            split_targets(" , ")

    def test_dns_round_robin_cool_off_and_resolution(self):
        now = [0.0]
        replicas, resolved = self.replicas("dns:///rlscore-headless.rl.svc:50051", now)
        self.assertEqual(len(replicas), 3)
        picked = [replicas.pick().stub for _ in range(6)]
        self.assertEqual(sorted(set(picked)), ["10.0.0.1:50051", "10.0.0.2:50051",
                                               "10.0.0.3:50051"])
        self.assertEqual(picked[:3], picked[3:])  # a cycle
        # A replica that fails is set aside for its cool-off, then comes back.
        bad = next(e for e in replicas.endpoints if e.address == "10.0.0.2:50051")
        replicas.failed(bad)
        self.assertNotIn("10.0.0.2:50051", [replicas.pick().stub for _ in range(6)])
        now[0] += 0.6
        self.assertIn("10.0.0.2:50051", [replicas.pick().stub for _ in range(6)])
        # The name is resolved again: a replica that went is closed, a new one is dialled.
        resolved[:] = ["10.0.0.1", "10.0.0.4"]
        gone = next(e for e in replicas.endpoints if e.address == "10.0.0.3:50051")
        now[0] += 31
        self.assertEqual(sorted(set(replicas.pick().stub for _ in range(4))),
                         ["10.0.0.1:50051", "10.0.0.4:50051"])
        self.assertTrue(gone.channel.closed)

    def test_a_run_sticks_to_one_replica_until_it_goes(self):
        now = [0.0]
        replicas, _ = self.replicas("dns:///rlscore-headless.rl.svc:50051", now)
        first = replicas.pick("run-17")
        self.assertTrue(all(replicas.pick("run-17") is first for _ in range(10)))
        # Runs spread: 200 runs use every replica.
        owners = {replicas.pick("run-%d" % i).address for i in range(200)}
        self.assertEqual(len(owners), 3)
        replicas.failed(first)
        second = replicas.pick("run-17")
        self.assertIsNot(second, first)
        self.assertIs(replicas.pick("run-17"), second)
        now[0] += 1
        self.assertIs(replicas.pick("run-17"), first)  # back once its cool-off ends

    def test_the_retry_budget_stops_retries_against_a_dead_cluster(self):
        from rlscore_client._replicas import RetryBudget
        budget = RetryBudget(10, 0.1)
        self.assertEqual([budget.on_failure() for _ in range(6)],
                         [True, True, True, True, False, False])
        for _ in range(20):
            budget.on_success()
        self.assertAlmostEqual(budget.tokens, 6.0)
        self.assertTrue(budget.on_failure() is False)  # 5 left: still at the line

        # Three dead replicas: the client's first calls retry, then the budget says no.
        dead = []
        for _ in range(3):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            dead.append(s)
            self.addCleanup(s.close)
        target = ",".join("127.0.0.1:%d" % s.getsockname()[1] for s in dead)
        client = Client(target, timeout=5, retries=8, backoff=0.001, max_backoff=0.001)
        self.addCleanup(client.close)
        for _ in range(4):
            with self.assertRaises(RlscoreError) as raised:
                client.score([{"completion": "x", "reference": "1"}])
            self.assertEqual(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
        stats = client.stats()
        self.assertGreaterEqual(stats["not_retried_budget"], 3)
        # Retries that the budget stopped: far fewer attempts than calls x (retries + 1).
        self.assertLess(stats["attempts"], 4 * 9 // 2)
        self.assertIn("retry budget is spent", raised.exception.message)

    def test_run_health_of_every_run_across_replicas(self):
        servers = [start_server(self), start_server(self)]
        client = Client([s.address for s in servers], timeout=30)
        self.addCleanup(client.close)
        # The ports are random and a run's home is a hash of run and address, so eight fixed names
        # all land on one replica about 1 time in 128: take names until both replicas own some.
        runs = []
        for i in range(200):
            runs.append("run-%d" % i)
            if len(runs) >= 8 and len({client._replicas.pick(r).address for r in runs}) == 2:
                break
        for run in runs:
            client.score_groups([{"reference": "1", "completions": ["<think>a</think>\\boxed{1}",
                                                                    "<think>a</think>\\boxed{2}"]}],
                                run_id=run, step=1)
        # The runs live on both replicas, each on one.
        homes = {run: client._replicas.pick(run).address for run in runs}
        self.assertEqual(len(set(homes.values())), 2)
        listed = client.run_health()
        self.assertEqual([r.run_id for r in listed.runs], sorted(runs))
        self.assertTrue(all(r.batches == 1 for r in listed.runs))
        self.assertEqual(client.run_health("run-3").runs[0].run_id, "run-3")

    def test_failover_to_a_live_replica_at_once(self):
        live = start_server(self)
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        self.addCleanup(dead.close)
        slept = []
        client = Client(["127.0.0.1:%d" % dead.getsockname()[1], live.address], timeout=30,
                        sleep=slept.append)
        self.addCleanup(client.close)
        for _ in range(6):
            reply = client.score([{"completion": "<think>a</think>\\boxed{1}", "reference": "1"}])
            self.assertEqual(list(reply.rewards), [1.1])
        stats = client.stats()
        self.assertEqual(stats["replicas"][live.address], 6)
        self.assertGreaterEqual(stats["failovers"], 1)
        self.assertEqual(slept, [])  # another replica was up: no backoff


def main():
    global ARGS, grpc, Client, RlscoreError, advantage_pb2, monitor_pb2, scoring_pb2
    global rlscore_trl, rlscore_verl, splitting, harness
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    ARGS, rest = parser.parse_known_args()
    sys.path[:0] = [os.path.abspath(ARGS.stubs), os.path.join(ROOT, "clients", "python"),
                    os.path.join(ROOT, "tests", "e2e")]
    import grpc as grpc_module
    import harness as harness_module
    import rlscore_client
    import rlscore_client._split
    import rlscore_client.trl
    import rlscore_client.verl
    from rlscore.v1 import advantage_pb2 as a, monitor_pb2 as m, scoring_pb2 as s
    grpc, harness = grpc_module, harness_module
    Client, RlscoreError = rlscore_client.Client, rlscore_client.RlscoreError
    advantage_pb2, monitor_pb2, scoring_pb2 = a, m, s
    rlscore_trl, rlscore_verl = rlscore_client.trl, rlscore_client.verl
    splitting = rlscore_client._split
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

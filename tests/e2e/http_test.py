#!/usr/bin/python3
"""End-to-end: the HTTP JSON listener of `rlscore serve --http-address`, with real HTTP requests.

OpenRLHF's remote reward (POST /get_reward), slime's (POST /reward) and NeMo Gym's resources
server (POST /verify, with /seed_session and GET /) as those trainers send them; malformed JSON, wrong methods, unknown profiles and oversized bodies get a 4xx with a
message and the server keeps serving. Run by ctest; standalone:

  /usr/bin/python3 tests/e2e/http_test.py --binary build/cli/rlscore --stubs build/python -v
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import RunningServer, status_kib  # noqa: E402

ARGS = None
PROMPT = "<|im_start|>user\nWhat is 6 * 7?<|im_end|>\n<|im_start|>assistant\n"


def post(port, path, body, content_type="application/json"):
    """(status, parsed JSON reply) of a POST; `body` is bytes, str or a JSON-able value."""
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                     headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


class HttpListenerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = RunningServer(ARGS.binary, "--http-address=127.0.0.1:0",
                                   "--max-message-bytes=65536")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def openrlhf_batch(self):
        responses = ["<think>6 * 7 = 42</think> The answer is \\boxed{42}<|im_end|>",
                     "<think>6 * 7 = 48?</think> \\boxed{48}<|im_end|>",
                     "<think>" + "Let me check again. " * 40 + "</think> 42<|im_end|>",
                     "<think>six sevens"]  # cut off at max tokens
        return {"query": [PROMPT + r for r in responses], "prompts": [PROMPT] * 4,
                "labels": ["42"] * 4}

    def test_openrlhf_get_reward(self):
        status, reply = post(self.port, "/get_reward", self.openrlhf_batch())
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["rewards"][:2], [1.1, 0.0])
        self.assertEqual(reply["scores"], [1.0, 0.0, 1.0, 0.0])
        logs = reply["extra_logs"]
        self.assertEqual(logs["rlscore_repetition"], [0.0, 0.0, -0.5, 0.0])  # the loop
        self.assertEqual(reply["rewards"][2], 1.0 + 0.1 - 0.5)
        for name, values in logs.items():
            self.assertEqual(len(values), 4, name)

    def test_slime_reward(self):
        status, reply = post(self.port, "/reward", {
            "prompt": [{"role": "user", "content": "What is 6 * 7?"}],
            "response": "<think>6 * 7 = 42</think> 42<|im_end|>", "label": 42})
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply, 1.1)
        status, reply = post(self.port, "/reward", {"prompt": "q", "response": "<think>x</think> 7",
                                                    "label": ["41", "42"]})
        self.assertEqual((status, reply), (200, 0.0))

    def test_malformed_json_is_400_with_a_message_and_the_server_keeps_serving(self):
        cases = [("/get_reward", '{"query": ["a", ', "invalid JSON at byte"),
                 ("/get_reward", "[1, 2]", "expected a JSON object, got array"),
                 ("/get_reward", '{"prompts": ["a"]}', '"query" is missing'),
                 ("/get_reward", '{"query": ["a"], "labels": ["1", "2"]}',
                  '"labels" has 2 entries but "query" has 1'),
                 ("/reward", '{"prompt": "q"}', '"response" is missing'),
                 ("/reward", b'{"response": "\xff"}', "invalid JSON")]
        for path, body, message in cases:
            with self.subTest(path=path, body=body):
                status, reply = post(self.port, path, body)
                self.assertEqual(status, 400)
                self.assertIn(message, reply["error"])
        status, reply = post(self.port, "/get_reward", self.openrlhf_batch())
        self.assertEqual(status, 200)
        metrics = self.server.metrics()
        self.assertIn('rlscore_requests_total{code="INVALID_ARGUMENT",method="POST /get_reward"}',
                      metrics)

    def test_limits_profiles_and_methods(self):
        status, reply = post(self.port, "/get_reward", {"query": ["x" * 70000]})
        self.assertEqual(status, 413)
        self.assertIn("max_message_bytes", reply["error"])
        status, reply = post(self.port, "/reward?profile=nope", {"response": "x"})
        self.assertEqual(status, 404)
        self.assertIn('profile "nope" is not configured', reply["error"])
        with self.assertRaises(urllib.error.HTTPError) as get:
            urllib.request.urlopen("http://127.0.0.1:%d/get_reward" % self.port, timeout=10)
        self.assertEqual(get.exception.code, 405)
        self.assertEqual(get.exception.headers["Allow"], "POST")
        with self.assertRaises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen("http://127.0.0.1:%d/nothing" % self.port, timeout=10)
        self.assertEqual(missing.exception.code, 404)
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % self.port, timeout=10) as r:
            self.assertEqual(r.read(), b"ok\n")

    def test_a_body_over_the_memory_budget_is_refused_and_the_server_keeps_serving(self):
        # 64 KiB of budget: a body of 20 KB is charged 4 bytes a byte plus 1 KiB a JSON string.
        server = RunningServer(ARGS.binary, "--http-address=127.0.0.1:0",
                               "--memory-budget-bytes=65536")
        self.addCleanup(server.stop)
        status, reply = post(server.http_port, "/reward",
                             {"response": "<think>" + "x" * 20000 + "</think> 42", "label": "42"})
        self.assertEqual(status, 413)
        self.assertIn("more than the whole memory budget memory_budget_bytes = 65536", reply["error"])
        status, reply = post(server.http_port, "/reward", {"response": "<think>6*7</think> 42",
                                                           "label": "42"})
        self.assertEqual(status, 200, reply)
        self.assertIn('rlscore_admission_refusals_total{retryable="false"} 1', server.metrics())

    def test_a_body_is_charged_for_the_tree_its_structure_builds(self):
        # 30 KB of empty objects are charged about 1.8 MB for their JSON tree (a 90 MB body once
        # peaked at 5.1 GB): charged by its structure, not 4 bytes a byte, the body is refused for
        # good before it is parsed, as an ordinary body of the same size is not.
        server = RunningServer(ARGS.binary, "--http-address=127.0.0.1:0",
                               "--memory-budget-bytes=1048576")
        self.addCleanup(server.stop)
        junk = "[" + ",".join(["{}"] * 10000) + "]"
        body = '\t{"response": "<think>6*7</think> 42", "label": "42", "junk": %s}' % junk
        status, reply = post(server.http_port, "/reward", body.encode())
        self.assertEqual(status, 413, reply)
        self.assertIn("more than the whole memory budget memory_budget_bytes = 1048576",
                      reply["error"])
        status, reply = post(server.http_port, "/reward",
                             {"response": "<think>" + "y" * 30000 + "</think> 42", "label": "42"})
        self.assertEqual(status, 200, reply)

    def run_health(self, run_id):
        from rlscore.v1 import monitor_pb2, scoring_service_pb2_grpc
        stub = scoring_service_pb2_grpc.ScoringServiceStub(self.server.channel())
        reply = stub.GetRunHealth(monitor_pb2.GetRunHealthRequest(run_id=run_id), timeout=10)
        return reply.runs[0]

    def test_run_id_feeds_run_health_one_batch_per_request(self):
        for _ in range(3):
            status, _ = post(self.port, "/get_reward?run_id=http-run", self.openrlhf_batch())
            self.assertEqual(status, 200)
        health = self.run_health("http-run")
        self.assertEqual((health.batches, health.last_step), (3, 2))
        status, _ = post(self.port, "/reward?run_id=http-run&step=40",
                         {"response": "<think>a</think> 1", "label": "1"})
        self.assertEqual(status, 200)
        health = self.run_health("http-run")
        self.assertEqual((health.batches, health.last_step), (4, 40))
        self.assertIn('rlscore_run_health_level{run="http-run"}', self.server.metrics())
        status, reply = post(self.port, "/reward?run_id=r&step=x", {"response": "x"})
        self.assertEqual(status, 400)
        self.assertIn('query parameter "step": "x" is not an integer', reply["error"])

    def test_what_would_crash_a_json_parser_is_400(self):
        for body, message in [('{"response": "x", "label": 1e400}', "number overflow"),
                              ('{"response": "x", "label": %s1%s}' % ("[" * 300, "]" * 300),
                               "nested deeper than 32 levels"),
                              ('{"query": ["a"], "labels": [[["1"]]]}',
                               '"labels"[0][0]: expected a string')]:
            with self.subTest(body=body[:40]):
                path = "/get_reward" if "query" in body else "/reward"
                status, reply = post(self.port, path, body)
                self.assertEqual(status, 400)
                self.assertIn(message, reply["error"])
        status, reply = post(self.port, "/reward?profile=" + "p" * 5000, {"response": "x"})
        self.assertEqual(status, 400)
        self.assertIn('query parameter "profile" is longer than 4096 bytes', reply["error"])
        self.assertEqual(post(self.port, "/reward", {"response": "<think>a</think> 1",
                                                     "label": True})[0], 200)

    def test_a_prompt_missing_from_its_query_is_counted(self):
        status, reply = post(self.port, "/get_reward", {
            "query": ["retokenised prompt <think>a</think> 42"], "prompts": ["<|user|>prompt"],
            "labels": ["42"]})
        self.assertEqual(status, 200)
        self.assertEqual(reply["scores"], [1.0])
        self.assertRegex(self.server.metrics(), r"rlscore_http_prompt_not_found_total [1-9]")
        # The warning is logged just after the counter moves, and read from the server's stderr
        # on the harness's thread: it may lag the metrics (it did under TSan beside fuzz jobs).
        deadline = time.time() + 30
        while "did not contain their prompt" not in self.server.log() and time.time() < deadline:
            time.sleep(0.05)
        self.assertIn("did not contain their prompt", self.server.log())

    def test_idle_keep_alive_connections_do_not_block_others(self):
        # Connections that send a request head and part of the body, then wait (slime keeps a
        # pool of 64 open): the listener still answers new requests.
        idle = []
        for _ in range(24):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(b"POST /reward HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            idle.append(s)
        self.addCleanup(lambda: [s.close() for s in idle])
        time.sleep(0.2)  # let the listener take them up
        start = time.monotonic()
        status, reply = post(self.port, "/reward", {"response": "<think>a</think> 1",
                                                    "label": "1"})
        self.assertEqual((status, reply), (200, 1.1))
        self.assertLess(time.monotonic() - start, 10)

    def test_concurrent_requests_are_all_answered(self):
        replies = [None] * 24
        def call(i):
            replies[i] = post(self.port, "/get_reward" if i % 2 else "/reward",
                              self.openrlhf_batch() if i % 2 else
                              {"response": "<think>a</think> %d" % i, "label": str(i)})
        threads = [threading.Thread(target=call, args=(i,)) for i in range(len(replies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for i, (status, reply) in enumerate(replies):
            self.assertEqual(status, 200, (i, reply))
            self.assertEqual(reply if i % 2 == 0 else reply["scores"][0], 1.1 if i % 2 == 0 else 1.0)


class HttpBodyReservationTest(unittest.TestCase):
    def test_a_claimed_content_length_reserves_at_most_16_mib_before_the_bytes_come(self):
        # Under the default 512 MiB message limit, a client may claim a 400 MB body and send one
        # byte of it. The listener reserves at most 16 MiB for a body it has not received: 24 such
        # connections add at most 384 MiB of address space (and almost no RSS: the pages are not
        # touched), not the 9.6 GB they claim.
        server = RunningServer(ARGS.binary, "--http-address=127.0.0.1:0")
        self.addCleanup(server.stop)
        pid = server.proc.pid
        self.assertEqual(post(server.http_port, "/reward", {"response": "1", "label": "1"})[0], 200)
        before_vm, before_rss = status_kib(pid, "VmSize"), status_kib(pid, "VmRSS")
        held = []
        self.addCleanup(lambda: [s.close() for s in held])
        for _ in range(24):
            s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
            s.sendall(b"POST /reward HTTP/1.1\r\nHost: x\r\nContent-Length: 400000000\r\n\r\n{")
            held.append(s)
        time.sleep(1.0)  # let the listener's threads take them up and reserve
        grown_vm = (status_kib(pid, "VmSize") - before_vm) / 1024
        grown_rss = (status_kib(pid, "VmRSS") - before_rss) / 1024
        print("24 bodies claiming 400 MB: address space +%.0f MiB, RSS +%.0f MiB"
              % (grown_vm, grown_rss), file=sys.stderr)
        self.assertLess(grown_vm, 1024)
        # The listener still answers.
        status, reply = post(server.http_port, "/reward", {"response": "<think>a</think> 1",
                                                           "label": "1"})
        self.assertEqual((status, reply), (200, 1.1))



class NemoGymClient:
    """NeMo Gym's calling convention (nemo_gym/server_utils.py): a JSON dict serialised whole
    (pydantic model_dump: every field, nulls included, compact like orjson), POSTed with only
    Content-Type: application/json; no cookie jar (the agent passes the previous reply's cookies
    by hand) and no timeout; any status but 2xx is an error (raise_for_status); the reply is read
    as JSON. An agent polls the server's base URL, seeds a session with the run request, calls the
    model, then verifies the run request plus the model's response."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.cookies = ""

    def request(self, method, path, payload=None):
        data = None if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if self.cookies:
            headers["Cookie"] = self.cookies
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req) as reply:
                self.cookies = reply.headers.get("Set-Cookie", "") or self.cookies
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as e:  # raise_for_status: the body is read, then raised
            return e.code, json.loads(e.read() or b"null")


def responses_api(answer, reasoning=None):
    """An OpenAI Responses API object as NeMo Gym's policy model server returns it."""
    output = []
    if reasoning is not None:
        output.append({"id": "rs_1", "type": "reasoning", "encrypted_content": None,
                       "summary": [{"text": reasoning, "type": "summary_text"}]})
    output.append({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                   "content": [{"annotations": [], "text": answer, "type": "output_text",
                                "logprobs": None}]})
    return {"id": "resp_1", "created_at": 1.0, "model": "policy", "object": "response",
            "output": output, "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
            "error": None, "incomplete_details": None, "instructions": None, "metadata": None,
            "temperature": 1.0, "top_p": 1.0, "max_output_tokens": None,
            "previous_response_id": None, "reasoning": None, "status": "completed",
            "text": None, "truncation": None, "usage": None, "user": None}


class NemoGymVerifyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = RunningServer(ARGS.binary, "--http-address=127.0.0.1:0")
        cls.client = NemoGymClient(cls.server.http_port)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def run_request(self, expected="\\(\\frac{1}{2}\\)"):
        # A dataset row of NeMo Gym's math resources server, with the agent's own extra keys.
        return {"responses_create_params": {"input": [{"role": "user", "type": "message",
                                                       "content": "What is 1/4 + 1/4?"}],
                                            "temperature": None, "max_output_tokens": None},
                "question": "What is 1/4 + 1/4?", "expected_answer": expected,
                "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
                "_ng_task_index": 3, "_ng_rollout_index": 0}

    def rollout(self, answer, reasoning=None, run=None):
        status, ok = self.client.request("GET", "/")
        self.assertEqual((status, ok), (200, {"status": "ok"}))
        run = run or self.run_request()
        status, seeded = self.client.request("POST", "/seed_session", run)
        self.assertEqual((status, seeded), (200, {}))
        return self.client.request("POST", "/verify",
                                   dict(run, response=responses_api(answer, reasoning)))

    def test_right_and_wrong_answers(self):
        status, reply = self.rollout("So the sum is $\\boxed{0.5}$.", reasoning="1/4+1/4 = 2/4")
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["reward"], 1.1)  # accuracy and the gated format reward
        self.assertEqual(reply["library_reward"], 1.0)
        self.assertEqual(reply["extracted_answer"], "0.5")
        self.assertIsNone(reply["judge_evaluations"])
        self.assertEqual(reply["rlscore"]["verdict"], "VERDICT_CORRECT")
        # The request comes back with it, as NeMo Gym's servers echo it.
        self.assertEqual(reply["question"], "What is 1/4 + 1/4?")
        self.assertEqual(reply["response"]["output"][1]["content"][0]["text"],
                         "So the sum is $\\boxed{0.5}$.")
        status, reply = self.rollout("The sum is \\boxed{1/3}.")
        self.assertEqual(status, 200, reply)
        self.assertEqual((reply["reward"], reply["library_reward"]), (0.0, 0.0))
        self.assertEqual(reply["rlscore"]["verdict"], "VERDICT_WRONG")

    def test_a_numeric_expected_answer_is_read_as_written(self):
        # An integer past 64 bits is a double to a JSON reader, and its rounded digits would
        # make the right answer wrong.
        answer = 2 ** 100
        status, reply = self.rollout("So it is $\\boxed{%d}$." % answer,
                                     run=self.run_request(expected=answer))
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["rlscore"]["verdict"], "VERDICT_CORRECT")

    def test_reasoning_is_not_graded_and_loops_in_it_are_penalised(self):
        # The answer only in the reasoning item earns nothing.
        status, reply = self.rollout("I am not sure.", reasoning="the answer is \\boxed{1/2}")
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["library_reward"], 0.0)
        status, reply = self.rollout("\\boxed{1/2}",
                                     reasoning="Wait, let me double check the previous step. " * 60)
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["rlscore"]["repetition"], -0.5)

    def test_instruction_following_rows(self):
        run = {"responses_create_params": {"input": "Answer without commas."},
               "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}],
               "prompt": "Answer without commas."}
        status, reply = self.rollout("No commas in this answer.", run=run)
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["library_reward"], 1.0)
        self.assertEqual(reply["rlscore"]["instructions"],
                         [{"id": "punctuation:no_comma", "strict": True, "loose": True}])

    def test_malformed_bodies_are_422_and_the_server_keeps_serving(self):
        for body, words in [
                ({"responses_create_params": {"input": "x"}, "expected_answer": "1"}, "response"),
                (dict(self.run_request(), response={"output": [{"id": "m"}]}),
                 "response.output[0].type"),
                (dict(self.run_request(), response={"output": [
                    {"type": "message", "content": [{"type": "output_text", "text": 3}]}]}),
                 "response.output[0].content[0].text"),
                ({"response": responses_api("1")}, "expected_answer")]:
            status, reply = self.client.request("POST", "/verify", body)
            self.assertEqual(status, 422, reply)
            self.assertIn(words, reply["detail"])
        status, reply = self.rollout("\\boxed{1/2}")
        self.assertEqual(status, 200, reply)
        # Counted under their own method.
        self.assertIn('method="POST /verify"', self.server.metrics())

def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True, help="directory of the generated Python stubs")
    ARGS, rest = parser.parse_known_args()
    sys.path.insert(0, ARGS.stubs)
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

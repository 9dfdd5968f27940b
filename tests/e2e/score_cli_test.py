#!/usr/bin/python3
"""End-to-end: `rlscore score` on a 10,000-line JSONL file, in-process and through a server.

Both ways, and in-process under each RLSCORE_MAX_CPU_ISA, must write byte-identical results and
the same summary; every line gets the verdict its generator intended (tests/e2e/make_rollouts.py);
malformed lines are reported with their line number and skipped, or stop the run with
--on-error=fail; the HTML report opens in headless Chromium where Debian's `chromium` is
installed. Run by ctest; standalone:

  /usr/bin/python3 tests/e2e/score_cli_test.py --binary build/cli/rlscore -v
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_rollouts  # noqa: E402  (tests/e2e/make_rollouts.py)
from harness import RefusingProxy, RunningServer  # noqa: E402

ARGS = None
LINES = 10000
# Malformed lines inserted into the file: (line number, text, what the error must say).
BAD_LINES = [
    (3, '{"prompt_id": "p", "completion": ', "invalid JSON at column"),
    (5000, '{"completion": 42}', 'field "completion": expected a string'),
    (9999, '{"completion": "x", "task": "poetry"}', 'unknown task "poetry"'),
]

# SHA-256 of the in-process output for the file write_corpus() makes, as the reader and writer
# built on nlohmann's DOM wrote it before simdjson's replaced them: the output must stay byte for
# byte the same. A change to a scorer that moves a result changes it too; then regenerate it
# (sha256sum of the --output file) and say in the commit which results moved and why. Last
# regenerated when task IF joined the list of tasks that line 9999's error names (the only byte
# that moved).
GOLDEN_OUTPUT_SHA256 = "fe8f48fc3bae97726401d5ec449d8c1fade685fd5c2dbd5742bfdafbf2bfe1b0"


def write_corpus(path):
    """The generated rollouts with BAD_LINES in place; returns the parsed good lines by number."""
    good = {}
    bad = {n: text for n, text, _ in BAD_LINES}
    rollouts = make_rollouts.generate(LINES, seed=1)
    with open(path, "w") as f:
        for number in range(1, LINES + len(BAD_LINES) + 1):
            if number in bad:
                f.write(bad[number] + "\n")
                continue
            line = next(rollouts)
            good[number] = line
            f.write(json.dumps(line) + "\n")
    return good


def run_score(*args, stdin=None, env=None, timeout=600):
    return subprocess.run([ARGS.binary, "score", *args], input=stdin, capture_output=True,
                          timeout=timeout, env=None if env is None else {**os.environ, **env})


def summary(stderr):
    """The summary table without the timing and scorer (which differ between runs)."""
    text = stderr.decode()
    text = re.sub(r", [0-9.]+ s \([0-9]+ rollouts/s\), .*?, profile", ", profile", text)
    return [l for l in text.splitlines() if not l.startswith("rlscore score: line ")]


class ScoreCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rlscore-score-")
        cls.input = os.path.join(cls.dir, "rollouts.jsonl")
        cls.good = write_corpus(cls.input)
        cls.local_out = os.path.join(cls.dir, "local.jsonl")
        cls.report = os.path.join(cls.dir, "report.html")
        cls.local = run_score(cls.input, "--output", cls.local_out, "--pass-at-k", "1,4,8",
                              "--report", cls.report)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def results(self, path):
        with open(path) as f:
            return [json.loads(line) for line in f]

    def test_every_line_has_its_result_in_input_order(self):
        self.assertEqual(self.local.returncode, 0, self.local.stderr.decode())
        results = self.results(self.local_out)
        self.assertEqual(len(results), LINES + len(BAD_LINES))
        self.assertEqual([r["line"] for r in results], list(range(1, len(results) + 1)))
        wrong = []
        for r in results:
            expected = self.good.get(r["line"])
            if expected is None:
                continue
            self.assertEqual(r["id"], expected["id"])
            self.assertEqual(r["prompt_id"], expected["prompt_id"])
            if r["verdict"] != expected["expect"]:
                wrong.append((r["line"], expected["kind"], r["verdict"]))
            if expected["kind"] == "loop":
                self.assertEqual(r["repetition"]["detector"], "NGRAM", r)
                self.assertEqual(r["components"]["repetition"], -0.5)
            if "token_ids" in expected:
                self.assertEqual(r["num_tokens"], len(expected["token_ids"]))
                self.assertFalse(r["tokens_estimated"])
            if expected.get("finished") is False:
                self.assertTrue(r["truncated"])
        self.assertEqual(wrong, [])

    def test_the_output_is_byte_identical_to_the_golden_digest(self):
        self.assertEqual(self.local.returncode, 0, self.local.stderr.decode())
        with open(self.local_out, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), GOLDEN_OUTPUT_SHA256)

    def test_every_instruction_set_gives_the_golden_output(self):
        # The vector paths (AVX-512 where this CPU has it) against the code an older CPU runs:
        # the same bytes, so a result never depends on the machine that scored it.
        for ceiling in ["avx2", "sse2"]:
            out = os.path.join(self.dir, "capped-%s.jsonl" % ceiling)
            done = run_score(self.input, "--output", out, "--pass-at-k", "1,4,8",
                             env={"RLSCORE_MAX_CPU_ISA": ceiling})
            self.assertEqual(done.returncode, 0, done.stderr.decode())
            self.assertEqual(summary(done.stderr), summary(self.local.stderr), ceiling)
            with open(out, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), GOLDEN_OUTPUT_SHA256,
                                 ceiling)

    def test_an_unknown_instruction_set_is_refused(self):
        done = run_score(self.input, "--output", os.devnull,
                         env={"RLSCORE_MAX_CPU_ISA": "avx-512"})
        self.assertEqual(done.returncode, 2)
        self.assertIn('RLSCORE_MAX_CPU_ISA="avx-512" names no instruction set: '
                      "use sse2, avx2 or avx512", done.stderr.decode())

    def test_malformed_lines_are_reported_with_their_number_and_skipped(self):
        results = {r["line"]: r for r in self.results(self.local_out)}
        stderr = self.local.stderr.decode()
        for number, _, message in BAD_LINES:
            self.assertIn(message, results[number]["error"])
            self.assertNotIn("verdict", results[number])
            self.assertIn("rlscore score: line %d: " % number, stderr)
        self.assertIn("10000 rollouts scored, 3 lines skipped", stderr)

    def test_summary_matches_the_results(self):
        results = [r for r in self.results(self.local_out) if "verdict" in r]
        correct = sum(r["verdict"] == "CORRECT" for r in results)
        table = "\n".join(summary(self.local.stderr))
        self.assertIn("accuracy           %.4f" % (correct / len(results)), table)
        self.assertIn("pass@8", table)
        self.assertIn("(1250 prompts)", table)
        self.assertIn("CORRECT %d" % correct, table)

    def score_remotely(self, address, name):
        """`rlscore score` of the input through `address`; checks its output is the in-process
        one."""
        remote_out = os.path.join(self.dir, name)
        remote = run_score(self.input, "--output", remote_out, "--pass-at-k", "1,4,8",
                           "--server", address)
        self.assertEqual(remote.returncode, 0, remote.stderr.decode())
        with open(self.local_out, "rb") as a, open(remote_out, "rb") as b:
            self.assertTrue(a.read() == b.read(), "in-process and %s outputs differ" % name)
        return remote

    def test_through_a_server_the_output_is_identical(self):
        server = RunningServer(ARGS.binary)
        self.addCleanup(server.stop)
        remote = self.score_remotely(server.address, "remote.jsonl")
        self.assertEqual(summary(remote.stderr), summary(self.local.stderr))
        self.assertIn("server " + server.address, remote.stderr.decode())
        self.assertIn('rlscore_requests_total{code="OK",method="Score"}', server.metrics())

    def test_a_busy_servers_refusals_are_retried(self):
        # A proxy refuses the first three calls as a server whose memory budget is held does;
        # the batches are sent again after a backoff and the output is the same.
        server = RunningServer(ARGS.binary)
        self.addCleanup(server.stop)
        proxy = RefusingProxy(server.address, refusals=3)
        self.addCleanup(proxy.stop)
        self.score_remotely(proxy.address, "retried.jsonl")
        # Requests of 256 lines; the bad lines are reported here, never sent.
        batches = (LINES + len(BAD_LINES) + 255) // 256
        self.assertEqual(proxy.calls, batches + 3)

    def test_a_refusal_that_is_not_retryable_stops_the_run(self):
        server = RunningServer(ARGS.binary)
        self.addCleanup(server.stop)
        proxy = RefusingProxy(server.address, refusals=1, retryable=False)
        self.addCleanup(proxy.stop)
        done = run_score(self.input, "--output", os.devnull, "--server", proxy.address)
        self.assertEqual(done.returncode, 1)
        self.assertIn("refused by the test proxy (call 1)", done.stderr.decode())
        self.assertNotIn("attempts", done.stderr.decode())

    def test_stdin_and_stdout(self):
        lines = "".join(json.dumps(l) + "\n" for l in make_rollouts.generate(20, seed=3))
        piped = run_score("-", "--progress=never", stdin=lines.encode())
        self.assertEqual(piped.returncode, 0, piped.stderr.decode())
        self.assertEqual(len(piped.stdout.decode().splitlines()), 20)
        self.assertIn("20 rollouts scored, 0 lines skipped", piped.stderr.decode())

    def test_fail_mode_stops_at_the_first_bad_line(self):
        for batch in ["1", "256"]:
            with self.subTest(batch_size=batch):
                out = os.path.join(self.dir, "fail.jsonl")
                failed = run_score(self.input, "--output", out, "--on-error=fail",
                                   "--batch-size=" + batch)
                self.assertEqual(failed.returncode, 1)
                self.assertIn("rlscore score: line 3: invalid JSON at column",
                              failed.stderr.decode())
                # The lines before it are scored and written; nothing after it.
                self.assertEqual([r["line"] for r in self.results(out)], [1, 2])

    def test_a_fatal_error_exits_while_stdin_is_still_open(self):
        # A producer that keeps its end of the pipe open must not keep rlscore waiting.
        proc = subprocess.Popen([ARGS.binary, "score", "-", "--on-error=fail"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            self.addCleanup(pipe.close)
        proc.stdin.write(b'{"completion": "<think>a</think> 1", "reference": "1"}\nnot json\n')
        proc.stdin.flush()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("rlscore score did not exit after the bad line")
        self.assertEqual(proc.returncode, 1)
        self.assertIn(b"line 2: invalid JSON", proc.stderr.read())
        self.assertIn(b'"verdict":"CORRECT"', proc.stdout.read())

    def test_a_request_level_refusal_stops_the_run(self):
        server = RunningServer(ARGS.binary, "--max-completions-per-request=10")
        self.addCleanup(server.stop)
        done = run_score(self.input, "--output", os.devnull, "--server", server.address)
        self.assertEqual(done.returncode, 1)
        self.assertIn("lines 1-256: items: 255 items exceed the limit "
                      "max_completions_per_request = 10", done.stderr.decode())
        # Not retried item by item.
        self.assertNotIn("one at a time", done.stderr.decode())

    def test_a_refused_item_is_skipped_alone(self):
        # Over --max-completion-bytes of an in-process config: the batch is refused for that
        # item, which is then skipped; the others of its batch are scored.
        config = os.path.join(self.dir, "small.textproto")
        with open(config, "w") as f:
            f.write("limits { max_completion_bytes: 64 }\n")
        lines = [{"completion": "<think>a</think> 1", "reference": "1"},
                 {"completion": "<think>" + "b" * 100 + "</think> 2", "reference": "2"},
                 {"completion": "<think>c</think> 3", "reference": "3"}]
        done = run_score("-", "--config", config,
                         stdin="".join(json.dumps(l) + "\n" for l in lines).encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        self.assertEqual([r.get("verdict") for r in results], ["CORRECT", None, "CORRECT"])
        self.assertEqual(results[1]["error"],
                         "completion.text: 117 bytes exceed the limit max_completion_bytes = 64")
        # The degraded path says so.
        self.assertIn("lines 1-3: the batch was refused (items[1].completion.text: ", done.stderr.decode())
        self.assertIn("scoring its rollouts one at a time", done.stderr.decode())

    def test_a_line_over_the_message_limit_is_refused_unread(self):
        # A line stands for a request: over limits.max_message_bytes it is an error of its own,
        # whether a file or a pipe brings it, wherever the reader's pieces are cut, and however
        # many threads score; its bytes are never held (the memory stays bounded).
        config = os.path.join(self.dir, "lines.textproto")
        with open(config, "w") as f:
            f.write("limits { max_message_bytes: 100000 }\n")
        good = {"completion": "<think>a</think> \\boxed{1}", "reference": "1"}
        long = dict(good, prompt="p" * 200000)
        text = (json.dumps(good) + "\n" + json.dumps(long) + "\r\n" + " " * 100001 + "\n" +
                json.dumps(good) + "\n" + json.dumps(long))
        path = os.path.join(self.dir, "long-lines.jsonl")
        with open(path, "w") as f:
            f.write(text)
        outputs = []
        for source, stdin in [(path, None), ("-", text.encode())]:
            for threads in ["1", "2"]:
                done = run_score(source, "--config", config, "--scoring-threads", threads,
                                 stdin=stdin)
                self.assertEqual(done.returncode, 0, done.stderr.decode())
                outputs.append(done.stdout)
                self.assertIn("2 rollouts scored, 3 lines skipped", done.stderr.decode())
        self.assertEqual(len(set(outputs)), 1)
        results = [json.loads(l) for l in outputs[0].decode().splitlines()]
        self.assertEqual([r.get("verdict") for r in results],
                         ["CORRECT", None, None, "CORRECT", None])
        size = len(json.dumps(long))
        self.assertEqual(results[1]["error"],
                         f"the line is {size} bytes; at most 100000 (max_message_bytes)")
        self.assertEqual(results[2]["error"],
                         "the line is 100001 bytes; at most 100000 (max_message_bytes)")
        self.assertEqual(results[4]["error"], results[1]["error"])

    def test_a_line_whose_json_tree_passes_the_memory_budget_is_refused(self):
        # 10,000 empty objects (30 KB) would hold about 1.8 MB as a JSON tree: over a budget of
        # 1 MiB, refused whichever reader the line goes to (a tab sends it to the reference one);
        # an ordinary line of the same size is read.
        config = os.path.join(self.dir, "budget.textproto")
        with open(config, "w") as f:
            f.write("limits { memory_budget_bytes: 1048576 }\n")
        good = {"completion": "<think>a</think> \\boxed{1}", "reference": "1"}
        objects = json.dumps(dict(good, junk=[{}] * 10000))
        text = (objects + "\n\t" + objects + "\n" +
                json.dumps(dict(good, prompt="p" * 30000)) + "\n")
        done = run_score("-", "--config", config, stdin=text.encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        self.assertEqual([r.get("verdict") for r in results], [None, None, "CORRECT"])
        for result in results[:2]:
            self.assertRegex(result["error"], r"^the line would take about [0-9]+ bytes to hold "
                             r"as JSON; at most 1048576 \(memory_budget_bytes\)$")

    def test_integer_prompt_ids_are_their_decimal_text(self):
        # Datasets number their prompts: 7 and "7" are one prompt for pass@k, echoed as text.
        lines = [{"prompt_id": 7, "completion": "<think>a</think> \\boxed{1}", "reference": "1"},
                 {"prompt_id": "7", "completion": "<think>a</think> \\boxed{2}", "reference": "1"},
                 {"prompt_id": 8, "completion": "<think>a</think> \\boxed{3}", "reference": "4"},
                 {"prompt_id": 1.5, "completion": "<think>a</think> \\boxed{1}", "reference": "1"}]
        done = run_score("-", "--pass-at-k", "1,2",
                         stdin="".join(json.dumps(l) + "\n" for l in lines).encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        self.assertEqual([r.get("prompt_id") for r in results], ["7", "7", "8", None])
        self.assertEqual(results[3]["error"],
                         'field "prompt_id": expected a string or an integer, got number')
        stderr = done.stderr.decode()
        self.assertIn("3 rollouts scored, 1 lines skipped", stderr)
        # Prompt 7 has one correct of its two samples and prompt 8 none of one: pass@1 is
        # (0.5 + 0) / 2; pass@2 counts only prompt 7, the one with two samples.
        self.assertRegex(stderr, r"pass@1 +0\.2500 +\(2 prompts\)")
        self.assertRegex(stderr, r"pass@2 +1\.0000 +\(1 prompts\)")

    def test_numeric_ids_come_back_as_the_same_numbers(self):
        # A trainer joins results to its rollouts by id: integers past 64 bits, which a double
        # would round to one value, come back as written, as do ids with a fraction or exponent.
        ids = [123456789012345678901234567890, 123456789012345678901234567891,
               -18446744073709551617, 2 ** 64, 17, 0.1, 2.5e-8]
        text = "".join('{"id": %s, "completion": "<think>a</think> 1", "reference": "1"}\n'
                       % json.dumps(i) for i in ids)
        for threads in ["1", "2"]:
            with self.subTest(threads=threads):
                done = run_score("-", "--scoring-threads", threads, stdin=text.encode())
                self.assertEqual(done.returncode, 0, done.stderr.decode())
                results = [json.loads(l) for l in done.stdout.decode().splitlines()]
                self.assertEqual([r["id"] for r in results], ids)
                self.assertEqual([type(r["id"]) for r in results], [type(i) for i in ids])

    def test_list_and_object_ids_come_back_as_written(self):
        # Ids built of several parts keep their parts' order and every digit of their numbers.
        ids = ['{"prompt": 123456789012345678901, "sample": 3}',
               '{"prompt": 123456789012345678902, "sample": 3}',
               '[2, "b", 1.50, {"z": 1, "a": []}]']
        text = "".join('{"id": %s, "completion": "<think>a</think> 1", "reference": "1"}\n'
                       % i for i in ids)
        done = run_score("-", stdin=text.encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        echoed = [re.search(r'"id":(.*),"prompt_id"', l).group(1)
                  for l in done.stdout.decode().splitlines()]
        self.assertEqual(echoed, [i.replace(" ", "") for i in ids])

    def test_numeric_and_boolean_references_are_answers(self):
        # Datasets ship numeric answer columns (AIME's integers, fractions as decimals): a
        # number is the reference as the line writes it, in a list too.
        lines = ['{"completion": "<think>a</think> \\\\boxed{204}", "reference": 204}',
                 '{"completion": "<think>a</think> \\\\boxed{0.5}", "reference": 0.50}',
                 '{"completion": "<think>a</think> \\\\boxed{7}", "references": [6, 7.0]}',
                 '{"completion": "<think>a</think> \\\\boxed{205}", "reference": 204}',
                 '{"completion": "<think>a</think> true", "reference": true, "task": "exact"}']
        for threads in ["1", "2"]:
            with self.subTest(threads=threads):
                done = run_score("-", "--scoring-threads", threads,
                                 stdin=("\n".join(lines) + "\n").encode())
                self.assertEqual(done.returncode, 0, done.stderr.decode())
                results = [json.loads(l) for l in done.stdout.decode().splitlines()]
                self.assertEqual([r.get("verdict", r.get("error")) for r in results],
                                 ["CORRECT", "CORRECT", "CORRECT", "WRONG", "CORRECT"])

    def test_numbers_and_nesting_that_would_crash_a_parser_are_skipped(self):
        lines = ['{"completion": "x", "external_accuracy": 1e400}',
                 '{"completion": "x", "id": %s1%s}' % ("[" * 100000, "]" * 100000),
                 '{"completion": "<think>a</think> 1", "reference": "1"}']
        done = run_score("-", stdin=("\n".join(lines) + "\n").encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode()[-2000:])
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        self.assertIn("number overflow", results[0]["error"])
        self.assertIn("nested deeper than 32 levels", results[1]["error"])
        self.assertEqual(results[2]["verdict"], "CORRECT")

    def test_interrupt_and_terminate_end_a_run_at_once(self):
        # A run reading a pipe that stays open, as behind a generator: Ctrl-C or a job
        # scheduler's SIGTERM must end it, not wait for the pipe.
        for sig in (signal.SIGINT, signal.SIGTERM):
            proc = subprocess.Popen([ARGS.binary, "score", "-"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.addCleanup(proc.stdin.close)
            proc.stdin.write(b'{"completion": "<think>a</think> 1", "reference": "1"}\n')
            proc.stdin.flush()
            time.sleep(0.5)
            proc.send_signal(sig)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                self.fail(f"rlscore score ignored signal {sig}")
            self.assertEqual(proc.returncode, -sig)

    def test_lines_the_fast_reader_leaves_to_the_reference_one_stay_linear(self):
        # A tab outside strings sends a line to the nlohmann reader, whose parser with a callback
        # took minutes over an array of a million objects (a second here, in a sanitizer build
        # a few), and the lines after it waited: a hang, which the time limit catches.
        big = '{\t"x": [%s], "completion": "x"}' % ",".join(["{}"] * 1500000)
        lines = [big, '{"completion": "<think>a</think> 1", "reference": "1"}']
        done = run_score("-", stdin=("\n".join(lines) + "\n").encode(), timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr.decode()[-2000:])
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        self.assertEqual([r["line"] for r in results], [1, 2])
        self.assertEqual(results[1]["verdict"], "CORRECT")

    def test_what_a_bad_line_echoes_is_short_and_inert(self):
        lines = ['{"completion": "x"}\0{"trailing": 1}',
                 '{"completion": "' + "x" * 1000000,
                 '{"task": "\\u001b[31mX\\r\\nrlscore score: fake", "completion": "x"}',
                 '{"completion": "<think>a</think> 1", "reference": "1"}']
        done = run_score("-", stdin=("\n".join(lines) + "\n").encode())
        self.assertEqual(done.returncode, 0, done.stderr.decode()[-2000:])
        results = [json.loads(l) for l in done.stdout.decode().splitlines()]
        # nlohmann's reader ended its input at a NUL: the line read as {"completion": "x"}.
        self.assertEqual(results[0]["error"],
                         "invalid JSON at column 20: a NUL byte, which JSON allows nowhere")
        self.assertIn("missing closing quote", results[1]["error"])
        self.assertLess(len(results[1]["error"]), 500)
        self.assertIn("\x1b[31m", results[2]["error"])  # the record keeps it, escaped as JSON
        self.assertEqual(results[3]["verdict"], "CORRECT")
        stderr = done.stderr.decode()
        self.assertNotIn("\x1b", stderr)
        self.assertIn('unknown task "\\x1b[31mX\\x0d\\x0arlscore score: fake"', stderr)
        self.assertLess(len(stderr), 3000)

    def test_an_unreachable_server_is_an_error(self):
        done = run_score(self.input, "--server", "127.0.0.1:1", "--timeout-secs", "1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("cannot reach an rlscore server at 127.0.0.1:1", done.stderr.decode())

    def test_without_rlscore_service_the_transport_commands_say_what_is_missing(self):
        # `rlscore` alone (cli/launcher.h): scoring in process works; serve, health and --server
        # need rlscore-service beside it and say so.
        alone = os.path.join(self.dir, "alone")
        os.mkdir(alone)
        binary = shutil.copy(ARGS.binary, os.path.join(alone, "rlscore"))
        done = subprocess.run([binary, "score", self.input, "--output", os.devnull],
                              capture_output=True, timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        for command in (["serve"], ["health"], ["score", self.input, "--server", "127.0.0.1:1"]):
            done = subprocess.run([binary, *command], capture_output=True, timeout=60)
            self.assertEqual(done.returncode, 1, command)
            self.assertIn(f"this command needs the transport, in {os.path.realpath(alone)}/rlscore-service",
                          done.stderr.decode())
            self.assertIn("No such file or directory", done.stderr.decode())

    def test_usage_errors(self):
        for args, message in [(["--on-error=maybe"], "expected skip or fail"),
                              (["--field", "answer=x"], 'unknown field "answer"'),
                              (["--pass-at-k", "0"], "not a k of at least 1"),
                              (["a.jsonl", "b.jsonl"], "at most one input file"),
                              (["--timeout-secs=18446744073709551615"],
                               "--timeout-secs must be between 1 and 604800"),
                              (["--batch-size=0"], "--batch-size must be between 1 and 262144"),
                              (["--server=127.0.0.1:1", "--config=x.textproto"],
                               "--config applies to in-process scoring")]:
            done = run_score(*args)
            self.assertEqual(done.returncode, 2, args)
            self.assertIn(message, done.stderr.decode())

    def test_progress_on_request(self):
        done = run_score(self.input, "--output", os.devnull, "--progress=always")
        self.assertIn("] 100%", done.stderr.decode())

    def test_report_is_self_contained(self):
        with open(self.report) as f:
            html = f.read()
        self.assertIn('<svg id="reward-histogram"', html)
        self.assertIn('<svg id="length-histogram"', html)
        self.assertNotIn("<script", html)
        self.assertNotIn("http://", html.replace('xmlns="http://www.w3.org/2000/svg"', ""))

    def test_report_opens_in_headless_chromium(self):
        chromium = shutil.which("chromium")
        if chromium is None:
            self.skipTest("Debian's chromium is not installed")
        profile = tempfile.mkdtemp(prefix="rlscore-chromium-", dir=self.dir)
        dom = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--user-data-dir=" + profile, "--dump-dom",
             "file://" + self.report],
            capture_output=True, timeout=120)
        self.assertEqual(dom.returncode, 0, dom.stderr.decode()[-2000:])
        page = dom.stdout.decode()
        # The browser parsed the page into a DOM: the tables and both charts with their bars.
        self.assertIn("<title>rlscore report: ", page)
        self.assertRegex(page, r"<th>rollouts scored</th><td>10000</td>")
        self.assertRegex(page, r"<th>lines skipped</th><td>3</td>")
        self.assertGreater(page.count('<rect class="bar"'), 10)
        self.assertIn('id="length-histogram"', page)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

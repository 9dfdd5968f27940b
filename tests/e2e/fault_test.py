#!/usr/bin/python3
"""Faults against the real `rlscore serve` binary (docs/RELIABILITY.md "Faults").

SIGTERM under load, clients that never read their stream or their answers, oversized/truncated/
garbage protobuf messages and HTTP/2 frames, thousands of connections opening and closing, and bad
config files.
After each, the server must still answer (or, after SIGTERM, have answered every call it accepted
and exited 0). Cancellation and deadlines mid-scoring are in tests/service/server_faults_test.cc
(ServerFaults), where a gated scorer makes them deterministic.

  /usr/bin/python3 tests/e2e/fault_test.py --binary build/cli/rlscore --stubs build/python
"""

import array
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import h2.config  # python3-h2 (scripts/setup.sh --test-tools)
import h2.connection
import h2.events
import h2.settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (tests/e2e/harness.py)
from harness import health_status, status_kib  # noqa: E402

ARGS = None
METHOD = "/rlscore.v1.ScoringService/ScoreGroups"


def stubs():
    from rlscore.v1 import scoring_pb2, scoring_service_pb2_grpc, monitor_pb2  # noqa: generated
    return scoring_pb2, scoring_service_pb2_grpc, monitor_pb2


def code_fences(salt):
    """Reasoning with four structural clones of one Python function, every identifier renamed in
    each copy (no word 8-gram recurs, so the n-gram rule stays quiet and the AST detector parses
    every fence, tens of times slower than the rest of scoring) and \\boxed{42} after it."""
    def clone(k):
        s = "%dq%d" % (salt, k)
        return ("```python\n"
                "def fn{s}(xs{s}, ys{s}, lim{s}):\n"
                "    acc{s} = 0\n"
                "    best{s} = None\n"
                "    for idx{s} in range(len(xs{s})):\n"
                "        if xs{s}[idx{s}] > lim{s}:\n"
                "            acc{s} += xs{s}[idx{s}] * ys{s}[idx{s}]\n"
                "        elif xs{s}[idx{s}] < -lim{s}:\n"
                "            acc{s} -= ys{s}[idx{s}]\n"
                "        else:\n"
                "            acc{s} = acc{s} // 2\n"
                "        if best{s} is None or acc{s} > best{s}:\n"
                "            best{s} = acc{s}\n"
                "    return best{s}, acc{s}\n"
                "```\n").format(s=s)
    body = "".join(clone(k) for k in range(4))
    return ("<think>Let me write code.\n" + body + "</think> \\boxed{42}").encode()


def heavy_request(pb, groups=16):
    return pb.ScoreGroupsRequest(groups=[
        pb.Group(references=["42"], completions=[pb.Completion(text=code_fences(g * 8 + i))
                                                 for i in range(8)])
        for g in range(groups)])


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class NeverReadingClient:
    """A raw HTTP/2 connection that sends gRPC calls and never reads their answers. It advertises
    a stream window of 0 bytes (SETTINGS_INITIAL_WINDOW_SIZE) and never opens it, as a client
    that consumes nothing does once its window is spent: the server can send headers and
    trailers, not one byte of an answer. It still answers the protocol (settings, pings), so the
    connection stays up until close()."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        self.headers = {}  # stream id -> {name: value} of its response headers and trailers
        self.ended = set()  # streams the server ended (answered in full, or refused)
        self.answer_bytes = 0
        self._flush()

    def call(self, path, message):
        """Sends one unary call (a whole request, end of stream) and returns its stream id."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", path),
                                     (":authority", "127.0.0.1"),
                                     ("content-type", "application/grpc"), ("te", "trailers")])
        body = memoryview(b"\x00" + struct.pack(">I", len(message)) + message)
        while body:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room == 0:  # the server's window: wait for its WINDOW_UPDATE
                self._flush()
                self.pump(1.0)
                continue
            self.conn.send_data(sid, body[:room].tobytes())
            body = body[room:]
        self.conn.end_stream(sid)
        self._flush()
        return sid

    def pump(self, seconds):
        """Handles what the server sends for up to `seconds` (answers are never acknowledged)."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(1 << 20)
        except socket.timeout:
            return
        if not data:
            raise ConnectionError("the server closed the connection")
        for event in self.conn.receive_data(data):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                self.headers.setdefault(event.stream_id, {}).update(dict(event.headers))
            elif isinstance(event, h2.events.StreamEnded):
                self.ended.add(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                self.answer_bytes += len(event.data)
        self._flush()

    def _flush(self):
        self.sock.sendall(self.conn.data_to_send())

    def close(self):
        self.sock.close()


class FaultTest(unittest.TestCase):

    def start(self, *extra):
        server = harness.RunningServer(ARGS.binary, *extra)
        self.addCleanup(server.stop)
        return server

    def config_flag(self, text):
        """--config= a temporary file holding `text`, removed after the test."""
        with tempfile.NamedTemporaryFile("w", suffix=".textproto", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return "--config=" + f.name

    def assert_serves(self, server):
        """A health check and a real ScoreGroups call both succeed (the timeouts allow for a
        sanitizer build on a loaded machine: the point is an answer, not its speed)."""
        pb, grpc_stubs, _ = stubs()
        with server.channel() as channel:
            self.assertEqual(health_status(channel, timeout=60), 1)
            reply = grpc_stubs.ScoringServiceStub(channel).ScoreGroups(heavy_request(pb, 1),
                                                                       timeout=60)
            self.assertEqual(len(reply.rewards), 8)

    def test_sigterm_under_load_answers_every_accepted_call_and_exits_0(self):
        pb, grpc_stubs, _ = stubs()
        # The check on results[0] below needs every completion's code parsed: four threads
        # parsing on two cores under TSan can spend the default profile's 100 ms time budget
        # (which would read as "skipped: budget (time)"), so it gets one no such machine spends.
        server = self.start("--drain-timeout-secs=120", self.config_flag(
            'profiles { name: "default" repetition { ast { parse_timeout_micros: 30000000 } } }\n'))
        channel = server.channel()
        stub = grpc_stubs.ScoringServiceStub(channel)
        futures = [stub.ScoreGroups.future(heavy_request(pb), timeout=300) for _ in range(24)]
        # Wait until calls are being handled, then SIGTERM with the rest still queued or in flight.
        in_flight = re.compile(r'^rlscore_requests_in_flight\{method="ScoreGroups"\} (\S+)$', re.M)
        deadline, metrics = time.time() + 120, ""
        while time.time() < deadline:
            metrics = server.metrics()
            handled = in_flight.search(metrics)
            if handled is not None and float(handled.group(1)) > 0:
                break
            time.sleep(0.01)
        else:
            self.fail("no ScoreGroups call was in flight within 120 s:\n%s\n%s"
                      % (metrics, server.log()))
        os.kill(server.proc.pid, signal.SIGTERM)
        # Calls sent after SIGTERM: refused cleanly (UNAVAILABLE), or served if they got in first.
        late = []
        for _ in range(10):
            late.append(stub.ScoreGroups.future(heavy_request(pb, 1), timeout=300))
            time.sleep(0.05)
        answered, refused = 0, 0
        for i, future in enumerate(futures + late):
            try:
                reply = future.result()
                self.assertEqual(len(reply.rewards), len(reply.advantages))
                # The premise of the wait above: these calls parse code, so they take long
                # enough to be seen in flight.
                self.assertEqual(reply.results[0].repetition.detector,
                                 pb.REPETITION_DETECTOR_AST_CODE_CLONE, reply.results[0])
                answered += 1
            except grpc.RpcError as e:
                # Refused by the server's drain, retryable: not CANCELLED, not a reset connection.
                # (gRPC's own shutdown, which would refuse without this message, starts only
                # once every answer is out, and these calls come well before.)
                self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE,
                                 "call %d (%s) was lost: %s %s\n%s"
                                 % (i, "sent before SIGTERM" if i < len(futures) else "late",
                                    e.code(), e.details(), server.log()))
                self.assertIn("the server is shutting down", e.details())
                refused += 1
        channel.close()
        self.assertEqual(server.wait(120), 0, server.log())
        # Every call the server had taken before SIGTERM (answered, or in flight at the last
        # scrape) was answered in full; the others were refused UNAVAILABLE (retryable), none lost
        # or CANCELLED.
        ok = re.search(r'^rlscore_requests_total\{code="OK",method="ScoreGroups"\} (\S+)$', metrics,
                       re.M)
        accepted = int(float(handled.group(1))) + (int(float(ok.group(1))) if ok else 0)
        self.assertGreaterEqual(answered, accepted, "%d calls were taken before SIGTERM but only %d "
                                "answered:\n%s\n%s" % (accepted, answered, metrics, server.log()))
        # The late calls come within half a second of SIGTERM, while the first calls are still
        # being scored: at most the first of them can get in before the drain starts.
        self.assertGreaterEqual(refused, len(late) - 1, server.log())
        print("SIGTERM under load: %d taken before it (%s in flight), %d answered, %d refused "
              "cleanly" % (accepted, handled.group(1), answered, refused), file=sys.stderr)

    def test_clients_that_never_read_their_stream_hold_bounded_memory(self):
        _, grpc_stubs, monitor_pb = stubs()
        server = self.start()
        channel = server.channel()
        stub = grpc_stubs.ScoringServiceStub(channel)
        before = status_kib(server.proc.pid, "VmRSS")
        # ~100 KB each. The monitor watches the whole generation (docs/REPETITION.md): the loop
        # fires early, the clean text never does.
        loop = "<think>" + "Wait, let me double check the sum once more... " * 2000
        clean = " ".join("w%05d" % i for i in range(16000))  # ~100 KB, never loops

        def deltas(text):
            yield monitor_pb.MonitorGenerationRequest(
                start=monitor_pb.GenerationStart(max_tokens=1 << 20))
            for at in range(0, len(text), 4096):
                yield monitor_pb.MonitorGenerationRequest(
                    text=monitor_pb.TextDelta(text=text[at:at + 4096]))
            time.sleep(30)  # keeps the stream open, never half-closed, never read

        calls = [stub.MonitorGeneration(deltas(loop if i % 2 else "<think>" + clean),
                                        timeout=120) for i in range(200)]

        def cancel_all():  # also when an assertion fails: nothing outlives the test
            for call in calls:
                call.cancel()
            channel.close()
        self.addCleanup(cancel_all)
        # The server took in the streams while no client read: each of the 100 looping ones was
        # told to stop (its answer written and never read).
        stops = re.compile(r'^rlscore_generation_stops_total\{reason="repetition_ngram"\} (\S+)$',
                           re.M)
        deadline, stopped = time.time() + 60, 0
        while time.time() < deadline and stopped < 100:
            found = stops.search(server.metrics())
            stopped = int(float(found.group(1))) if found else 0
            time.sleep(0.2)
        self.assertEqual(stopped, 100, server.log())
        time.sleep(4)  # and the clean ones' text keeps arriving
        during = status_kib(server.proc.pid, "VmRSS")
        self.assert_serves(server)  # health and scoring still answer meanwhile
        cancel_all()
        growth_mib = (during - before) / 1024
        print("200 unread streams: server RSS %.1f -> %.1f MiB" % (before / 1024, during / 1024),
              file=sys.stderr)
        # 100 clean streams of ~100 KB each, all held by the server: a bound is the text, its
        # words (tens of bytes each) and gRPC's buffers, far below 400 MB.
        self.assertLess(growth_mib, 400)
        time.sleep(1)
        self.assert_serves(server)

    def test_answers_a_client_never_reads_keep_their_calls_place_and_memory_stays_bounded(self):
        # An answer waiting for a client that does not read it holds the memory of its call (the
        # answer, and the request gRPC keeps until the call is over), so it must keep its call's
        # place among max_concurrent_calls until gRPC is done with it: otherwise calls whose
        # answers are never read add up without bound.
        from rlscore.v1 import advantage_pb2 as pb, scoring_service_pb2_grpc  # noqa: generated
        server = self.start(self.config_flag("limits { max_concurrent_calls: 4 }\n"))
        n = 1 << 20  # rewards per call: 8 MiB of request and 8 MiB of answer
        request = pb.ComputeAdvantagesRequest(group_sizes=[16] * (n // 16))
        request.rewards.extend(array.array("d", (float(i % 5) for i in range(n))))
        wire = request.SerializeToString()
        path = "/rlscore.v1.ScoringService/ComputeAdvantages"
        before = status_kib(server.proc.pid, "VmRSS")

        client = NeverReadingClient(server.port)
        self.addCleanup(client.close)
        sids = [client.call(path, wire) for _ in range(24)]
        deadline = time.time() + 120
        while time.time() < deadline and not (
                len(client.ended) == 20 and all(s in client.headers for s in sids)):
            client.pump(0.2)
        held = [s for s in sids if s not in client.ended]
        refused = [s for s in sids if s in client.ended]
        during = status_kib(server.proc.pid, "VmRSS")
        print("24 calls whose answers are never read: %d held, %d refused; server RSS %.0f -> "
              "%.0f MiB" % (len(held), len(refused), before / 1024, during / 1024),
              file=sys.stderr)
        # Four answers wait, each holding its place; the other twenty were refused at once.
        self.assertEqual(len(held), 4, (client.headers, server.log()))
        for s in refused:
            self.assertEqual(client.headers[s].get("grpc-status"), "8", client.headers[s])
            self.assertIn("max_concurrent_calls", client.headers[s].get("grpc-message", ""))
        self.assertEqual(client.answer_bytes, 0)
        # The held answers are what fills the limit: a well-behaved client's call is refused too,
        # while health checks (not calls of the pool) still answer.
        with server.channel() as channel:
            self.assertEqual(health_status(channel, timeout=60), 1)
            stub = scoring_service_pb2_grpc.ScoringServiceStub(channel)
            small = pb.ComputeAdvantagesRequest(rewards=[0.0, 1.0], group_sizes=[2])
            with self.assertRaises(grpc.RpcError) as busy:
                stub.ComputeAdvantages(small, timeout=60)
            self.assertEqual(busy.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            # The bound is the count above: four calls' requests and answers. RSS only confirms
            # it loosely, since freed requests stay in the allocator (and in ASan's quarantine,
            # up to 256 MiB): 152 MiB of growth in the release build, 358 under ASan, against
            # 461 in the release build when all 24 answers were held.
            self.assertLess((during - before) / 1024, 1024)
            # The client goes away: gRPC cancels its calls, their places come back.
            client.close()
            deadline = time.time() + 60
            while True:
                try:
                    reply = stub.ComputeAdvantages(small, timeout=60)
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.time() > deadline:
                        raise
                    time.sleep(0.1)
            self.assertEqual(len(reply.advantages), 2)
            # One place back let that call in; the others follow (slower under a sanitizer).
            while True:
                try:
                    self.assert_serves(server)
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.time() > deadline:
                        raise
                    time.sleep(0.1)

    def test_oversized_truncated_and_garbage_messages_are_refused_and_serving_continues(self):
        pb, _, _ = stubs()
        server = self.start("--max-message-bytes=1048576")
        raw = lambda b: b  # noqa: E731
        with server.channel() as channel:
            call = channel.unary_unary(METHOD, request_serializer=raw, response_deserializer=raw)
            valid = heavy_request(pb, 2).SerializeToString()
            cases = {
                "garbage": b"\xff" * 64,
                "truncated": valid[:len(valid) // 2],
                "bad wire type": b"\x12\x07\x0b\x0b\x0b",
                "huge length prefix": b"\x12\xff\xff\xff\xff\x0f",
                "invalid UTF-8": b"\x0a\x02\xff\xfe",  # profile = 0xff 0xfe
                "oversized": b"\x0a\x80\x80\x80\x01" + b"x" * (2 << 20),
            }
            reasons = {}
            for name, payload in cases.items():
                with self.assertRaises(grpc.RpcError, msg=name) as caught:
                    call(payload, timeout=30)
                code, details = caught.exception.code(), caught.exception.details() or ""
                print("%s: %s %s" % (name, code.name, details), file=sys.stderr)
                reasons[name] = details
                if name == "oversized":  # refused by gRPC before any of our code runs
                    self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
                else:  # named, not gRPC's bare UNIMPLEMENTED
                    self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, "%s: %s" % (name, details))
                    self.assertIn("not a valid rlscore.v1.ScoreGroupsRequest", details)
            # protobuf gives this reason only in its log: the error carries it instead.
            self.assertIn("'rlscore.v1.ScoreGroupsRequest.profile' contains invalid UTF-8",
                          reasons["invalid UTF-8"])
            # The valid bytes still work on the same channel.
            reply = pb.ScoreGroupsResponse.FromString(call(valid, timeout=60))
            self.assertEqual(len(reply.rewards), 16)
        self.assert_serves(server)
        # protobuf's log lines for bad input stay out of the server's log (a client could
        # otherwise write one per request).
        self.assertNotIn("libprotobuf", server.log())

    def test_a_bad_message_on_a_stream_ends_it_with_an_error_not_ok(self):
        """gRPC reports a stream message that does not parse like a half-close: the stream would
        end OK, which the client reads as "nothing fired" while its generation goes on unwatched."""
        _, _, monitor_pb = stubs()
        server = self.start()
        raw = lambda b: b  # noqa: E731
        start = monitor_pb.MonitorGenerationRequest(
            start=monitor_pb.GenerationStart(max_tokens=1 << 20)).SerializeToString()
        text = monitor_pb.MonitorGenerationRequest(
            text=monitor_pb.TextDelta(text="hello there")).SerializeToString()
        cases = {
            "garbage": b"\xff" * 16,
            "truncated": text[:-3],
            "bad wire type": b"\x1a\x07\x0b\x0b\x0b",
            "invalid UTF-8": b"\x1a\x05\x0a\x03\xff\xfe\xfd",  # text.text = ff fe fd
        }
        with server.channel() as channel:
            call = channel.stream_stream("/rlscore.v1.ScoringService/MonitorGeneration",
                                         request_serializer=raw, response_deserializer=raw)
            for name, payload in cases.items():
                def messages():
                    yield start
                    yield text
                    yield payload
                    time.sleep(2)  # the server answers before this: no half-close to hide behind
                    yield text
                with self.assertRaises(grpc.RpcError, msg=name) as caught:
                    list(call(messages(), timeout=60))
                code, details = caught.exception.code(), caught.exception.details() or ""
                print("stream, %s: %s %s" % (name, code.name, details), file=sys.stderr)
                self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, "%s: %s" % (name, details))
                self.assertIn("message 3 of the stream (%d bytes) is not a valid "
                              "rlscore.v1.MonitorGenerationRequest" % len(payload), details)
            self.assertIn("'rlscore.v1.TextDelta.text' contains invalid UTF-8", details)
            # A well-formed stream on the same channel is still watched: the loop fires.
            loop = "<think>" + "Wait, let me double check the sum once more... " * 40

            def looping():
                yield start
                yield monitor_pb.MonitorGenerationRequest(
                    text=monitor_pb.TextDelta(text=loop)).SerializeToString()
                time.sleep(2)
            answers = list(call(looping(), timeout=60))
            self.assertEqual(len(answers), 1)
            stop = monitor_pb.MonitorGenerationResponse.FromString(answers[0])
            self.assertEqual(stop.reason, monitor_pb.STOP_REASON_REPETITION_NGRAM, stop)
        self.assert_serves(server)
        self.assertNotIn("libprotobuf", server.log())

    def test_garbage_and_truncated_http2_frames_do_not_disturb_the_server(self):
        server = self.start()
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
        payloads = [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                    # HTTP/1 on an HTTP/2 port
            preface[:10],                                              # a cut preface
            preface + b"\x00" * 9,                                     # a DATA frame on stream 0
            preface + settings + b"\x00\x10\x00\x01\x05\x00\x00\x00\x01" + b"\xff" * 16,  # HPACK junk
            preface + settings + b"\x00\xff\xff\x00\x00\x00\x00\x00\x01" + b"x" * 100,  # cut frame
            os.urandom(4096),
            preface + os.urandom(4096),
        ]
        for _ in range(20):
            for payload in payloads:
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                    try:
                        s.sendall(payload)
                        s.settimeout(0.2)
                        s.recv(65536)
                    except OSError:
                        pass  # the server may close first: that is the point
        self.assert_serves(server)
        self.assertIsNone(server.proc.poll())

    def test_thousands_of_connections_open_and_close_without_leaking(self):
        server = self.start()
        self.assert_serves(server)
        fds_before = open_fds(server.proc.pid)

        def churn():
            """3,800 connections: 3,000 bare TCP ones (connect, maybe send the preface, close),
            300 whole gRPC clients (connect, health check, close), then 500 held open at once
            and all closed. Returns the server's largest RSS seen, in KiB."""
            for i in range(3000):
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                    if i % 2:
                        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            for _ in range(300):
                with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
                    self.assertEqual(health_status(channel), 1)
            held = [socket.create_connection(("127.0.0.1", server.port), timeout=5)
                    for _ in range(500)]
            self.assert_serves(server)
            peak = status_kib(server.proc.pid, "VmRSS")
            for s in held:
                s.close()
            deadline = time.time() + 30
            while open_fds(server.proc.pid) > fds_before + 16 and time.time() < deadline:
                time.sleep(0.2)
            self.assertLessEqual(open_fds(server.proc.pid), fds_before + 16)
            return max(peak, status_kib(server.proc.pid, "VmRSS"))

        # Memory: two rounds warm gRPC's and the allocator's caches up; after ten more, RSS must
        # not have grown 40 MiB past the most the warm-up used. The least of the last three
        # rounds' figures is the one compared: glibc's arenas make RSS step by up to 25 MiB and
        # stay there; a leak raises all three. On this machine, in ten runs, the plain build ended
        # between 1 MiB below and 22 MiB above the warm-up's figure; with a leak of 2 KiB per
        # accepted connection (an LD_PRELOAD shim over accept4 that keeps that much), 64 and 70
        # MiB above it. Under a sanitizer RSS says little (ASan's quarantine keeps 256 MB of
        # freed memory, TSan shadows everything): LeakSanitizer checks the ASan build at the
        # server's exit, and one round checks descriptors.
        warm_kib = max(churn() for _ in range(1 if ARGS.sanitizer else 2))
        if ARGS.sanitizer:
            print("open fds: %d before, %d after; RSS %.1f MiB, not checked (%s)" % (
                fds_before, open_fds(server.proc.pid), warm_kib / 1024, ARGS.sanitizer),
                file=sys.stderr)
        else:
            later_kib = []
            for _ in range(10):
                churn()
                later_kib.append(status_kib(server.proc.pid, "VmRSS"))
            print("open fds: %d before, %d after; RSS %.1f MiB after the warm-up, then %s MiB "
                  "after each round of 3,800 connections" % (
                      fds_before, open_fds(server.proc.pid), warm_kib / 1024,
                      ", ".join("%.1f" % (k / 1024) for k in later_kib)), file=sys.stderr)
            self.assertLess(min(later_kib[-3:]) - warm_kib, 40 * 1024)
        self.assert_serves(server)

    def test_a_config_file_with_errors_is_refused_at_start_naming_the_line(self):
        cases = {
            "unknown field": ('listen_address: "127.0.0.1:0"\nlisten: "x"\n', ":2:"),
            "bad value": ('limits {\n  max_group_size: -3\n}\n', ":2:"),
            "unbalanced": ('limits {\n  max_group_size: 3\n', ":3:"),
            # Values that parse but are refused: the line of their setting.
            "refused value": ('listen_address: "127.0.0.1:0"\nlimits {\n  max_group_size: 0\n}\n',
                              ":3:3: limits.max_group_size must be at least 1"),
            "refused profile": ('\nprofiles {\n  name: "p"\n  repetition { penalty: 0.5 }\n}\n',
                                ':2:1: profile "p": repetition.penalty'),
            "not text": ("\x00\x01\x02binary", ":1:"),
        }
        for name, (text, where) in cases.items():
            with tempfile.NamedTemporaryFile("w", suffix=".textproto", delete=False) as f:
                f.write(text)
            try:
                run = subprocess.run([ARGS.binary, "serve", "--config=" + f.name],
                                     capture_output=True, text=True, timeout=30,
                                     stdin=subprocess.DEVNULL)
            finally:
                os.unlink(f.name)
            self.assertEqual(run.returncode, 2, "%s: %s" % (name, run.stderr))
            self.assertIn(f.name + where, run.stderr, name)
        missing = subprocess.run([ARGS.binary, "serve", "--config=/nonexistent/rlscore.textproto"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("/nonexistent/rlscore.textproto", missing.stderr)


if __name__ == "__main__":
    harness.test_main(sys.modules[__name__])

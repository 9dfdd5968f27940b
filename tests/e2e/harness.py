"""Shared test harness: the real `rlscore serve` binary on free ports, for Python tests.

    import sys, os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # or the path to tests/e2e
    from harness import RunningServer, health_status

    server = RunningServer("build/cli/rlscore", "--max-message-bytes=4096")
    try:
        channel = server.channel()          # insecure, no message size limits
        health_status(channel)              # 1 = SERVING
        server.metrics()                    # the Prometheus text of /metrics
    finally:
        server.stop()

The server binds gRPC and metrics to port 0 and logs
`serving rlscore.v1 on ADDR (port N); metrics on ADDR (port M)`; the harness reads the ports
from that line. Needs grpcio (Debian's /usr/bin/python3 has it), nothing else.
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import unittest
import urllib.request

import grpc

# The port is absent when the server listens on a unix: path.
_READY = re.compile(r"serving rlscore\.v1 on (\S+?)(?: \(port (\d+)\))?; "
                    r"metrics on \S+ \(port (\d+)\)")
# Present when the server was started with --http-address.
_HTTP = re.compile(r"; http on \S+ \(port (\d+)\)")
# The first line of a sanitizer's report (UndefinedBehaviorSanitizer's is "file:line: runtime
# error: ...").
_SANITIZER_REPORT = re.compile(r"WARNING: ThreadSanitizer|ERROR: \w*Sanitizer|: runtime error: ")


class RunningServer:
    """`rlscore serve` on free ports, with its stdout and stderr collected on a thread.

    `binary` is the path of the rlscore executable; `extra` are more `serve` flags; `cwd` and
    `env` are the process's working directory and environment (default: ours) (a later
    `--listen-address=unix:/path` replaces the default 127.0.0.1:0). With `free_ports=False` the
    server gets no address flags: its built-in 127.0.0.1:50051 and 127.0.0.1:9464. The constructor
    returns once the server logged that it serves (RuntimeError with its log if it exited first or
    did not within 30 seconds).
    `port` (None on a unix: path), `metrics_port`, `http_port` (None without --http-address) and
    `address` are then set. Call stop() when done
    (tests: self.addCleanup(server.stop)). Not thread-safe; one owner.
    """

    def __init__(self, binary, *extra, cwd=None, env=None, free_ports=True):
        ports = (["--listen-address=127.0.0.1:0", "--metrics-address=127.0.0.1:0"]
                 if free_ports else [])
        self.proc = subprocess.Popen(
            [os.path.abspath(binary), "serve", *ports, *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=cwd, env=env)
        self.lines = []
        self.ready = threading.Event()
        self.port = self.metrics_port = self.listen_address = self.http_port = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self.ready.wait(30) or self.listen_address is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "".join(self.lines))

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            m = _READY.search(line)
            if m:
                self.listen_address = m.group(1)
                self.port = int(m.group(2)) if m.group(2) else None
                self.metrics_port = int(m.group(3))
                http = _HTTP.search(line)
                self.http_port = int(http.group(1)) if http else None
                self.ready.set()
        self.ready.set()  # the server exited (before serving, the constructor says so)

    @property
    def address(self):
        """The gRPC address to dial: `127.0.0.1:PORT`, or the `unix:PATH` it listens on."""
        return self.listen_address if self.port is None else "127.0.0.1:%d" % self.port

    def channel(self):
        return grpc.insecure_channel(
            self.address,
            options=[("grpc.max_receive_message_length", -1),
                     ("grpc.max_send_message_length", -1)])

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=10) as r:
            return r.read().decode()

    def log(self):
        return "".join(self.lines)

    def wait(self, timeout):
        """Waits for the server to exit and for its last log lines to be read (the process can end
        before the reader thread has taken what it wrote last); returns the exit status.
        subprocess.TimeoutExpired if it is still running after `timeout` seconds."""
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code

    def stop(self, grace=30):
        """SIGTERM, as Kubernetes stops the sidecar; checks that the server exited 0 within
        `grace` seconds (else SIGKILL) and that its log has no sanitizer report: ThreadSanitizer
        goes on after a report and LeakSanitizer reports only at exit, so this is where a
        sanitizer build's findings in a test's server surface. A server that had already exited
        (a test that stopped it checks its status itself) is checked for reports only.
        AssertionError with the log when something is wrong."""
        code = 0
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                code = self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
                code = "none within %d s of SIGTERM (killed)" % grace
        self._reader.join(10)
        self.proc.stdout.close()
        log = self.log()
        if code != 0 or _SANITIZER_REPORT.search(log):
            raise AssertionError("the server did not stop cleanly (exit status %s):\n%s"
                                 % (code, log))


class RefusingProxy:
    """A gRPC proxy in this process in front of `target` that refuses the first `refusals` unary
    calls as a busy rlscore server does (RESOURCE_EXHAUSTED with the trailer rlscore-retryable;
    or without it when `retryable` is False), then forwards every call's bytes unchanged. For
    testing the clients' retries. `calls` counts what reached it; `address` is what to dial.
    Call stop() when done."""

    def __init__(self, target, refusals, retryable=True):
        from concurrent import futures
        self.calls = 0
        self._lock = threading.Lock()
        self._refusals = refusals
        self._retryable = retryable
        self._upstream = grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", -1),
                             ("grpc.max_send_message_length", -1)])
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                                   options=[("grpc.max_receive_message_length", -1),
                                            ("grpc.max_send_message_length", -1)])
        self._server.add_generic_rpc_handlers([self])
        self.address = "127.0.0.1:%d" % self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    def service(self, details):  # grpc.GenericRpcHandler
        method = details.method
        forward = self._upstream.unary_unary(method)  # bytes in, bytes out

        def handle(request, context):
            with self._lock:
                self.calls += 1
                refuse = self.calls <= self._refusals
            if refuse:
                if self._retryable:
                    context.set_trailing_metadata((("rlscore-retryable", "memory_budget_bytes"),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              "memory admission: refused by the test proxy (call %d)" % self.calls)
            return forward(request, timeout=context.time_remaining())

        return grpc.unary_unary_rpc_method_handler(handle)

    def stop(self):
        self._server.stop(None)
        self._upstream.close()


def compute_advantages_bytes(rewards, group):
    """A ComputeAdvantagesRequest of `rewards` rewards (i % 3) in groups of `group`, encoded by
    hand: protobuf's Python objects take minutes for tens of millions of doubles."""
    import array

    def varint(n):
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    values = array.array("d", bytes(8 * rewards))
    pattern = array.array("d", [0.0, 1.0, 2.0] * 1024)
    for at in range(0, rewards, len(pattern)):
        values[at:at + len(pattern)] = pattern[:min(len(pattern), rewards - at)]
    packed = values.tobytes()
    sizes = varint(group) * (rewards // group)
    return b"\x0a" + varint(len(packed)) + packed + b"\x12" + varint(len(sizes)) + sizes


def status_kib(pid, field):
    """A size field of /proc/PID/status (VmRSS: resident memory, VmSize: address space), in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def health_status(channel, service="", timeout=10):
    """grpc.health.v1.Health/Check with hand-encoded messages (Debian ships no health stubs)."""
    request = b"" if not service else b"\x0a" + bytes([len(service)]) + service.encode()
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=lambda b: b, response_deserializer=lambda b: b)
    reply = check(request, timeout=timeout)
    return reply[1] if len(reply) == 2 and reply[0] == 0x08 else 0


def test_main(module):
    """The main of a test file: parses --binary, --stubs (the generated Python stubs) and
    --sanitizer, puts the stubs on sys.path, sets `module.ARGS`, and runs the file's unittest
    cases with any other arguments (-v, a test name)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--sanitizer", default="",
                        help="the sanitizers the binary was built with (address,undefined or "
                             "thread), for checks whose meaning they change, such as RSS")
    module.ARGS, rest = parser.parse_known_args()
    sys.path.insert(0, module.ARGS.stubs)
    unittest.main(module=module, argv=[sys.argv[0]] + rest)

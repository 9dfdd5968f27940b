#!/usr/bin/python3
"""Security defaults of `rlscore serve` (docs/SECURITY.md): TLS and mTLS on the API, refused TLS
misconfigurations, loopback binds, no core dumps and nothing written to disk.

Certificates are made for each run with the openssl command line in a temporary directory.

  /usr/bin/python3 tests/e2e/security_test.py --binary build/cli/rlscore --stubs build/python
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (tests/e2e/harness.py)
from harness import health_status  # noqa: E402

ARGS = None


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
            "-keyout", name + ".key", "-out", name + ".pem", cwd=d)


def make_cert(d, ca, name, san):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n" % san)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout",
            name + ".key", "-out", name + ".csr", cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".pem", cwd=d)


def read(d, name):
    with open(os.path.join(d, name), "rb") as f:
        return f.read()


class SecurityTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.dir = cls.tmp.name
        make_ca(d, "ca")
        make_ca(d, "rogue-ca")
        make_cert(d, "ca", "server", "IP:127.0.0.1,DNS:localhost")
        make_cert(d, "ca", "client", "DNS:trainer")
        make_cert(d, "rogue-ca", "rogue", "DNS:trainer")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, *extra):
        server = harness.RunningServer(ARGS.binary, *extra)
        self.addCleanup(server.stop)
        return server

    def secure(self, server, client=None):
        credentials = grpc.ssl_channel_credentials(
            root_certificates=read(self.dir, "ca.pem"),
            private_key=read(self.dir, client + ".key") if client else None,
            certificate_chain=read(self.dir, client + ".pem") if client else None)
        return grpc.secure_channel("127.0.0.1:%d" % server.port, credentials)

    def score(self, channel):
        from rlscore.v1 import scoring_pb2, scoring_service_pb2_grpc  # noqa: generated at build
        stub = scoring_service_pb2_grpc.ScoringServiceStub(channel)
        group = scoring_pb2.Group(references=["42"], completions=[
            scoring_pb2.Completion(text=b"<think>6*7</think> \\boxed{42}")])
        return stub.ScoreGroups(scoring_pb2.ScoreGroupsRequest(groups=[group]), timeout=10)

    def assert_refused(self, channel):
        with self.assertRaises(grpc.RpcError) as caught:
            self.score(channel)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_tls_serves_verified_clients_and_refuses_plaintext(self):
        server = self.start("--tls-cert=" + self.path("server.pem"),
                            "--tls-key=" + self.path("server.key"))
        self.assertIn("; TLS", server.log())
        with self.secure(server) as channel:
            self.assertEqual(health_status(channel), 1)
            self.assertAlmostEqual(self.score(channel).rewards[0], 1.1)
        with grpc.insecure_channel("127.0.0.1:%d" % server.port) as channel:
            self.assert_refused(channel)

    def test_mtls_requires_a_client_certificate_from_the_configured_ca(self):
        server = self.start("--tls-cert=" + self.path("server.pem"),
                            "--tls-key=" + self.path("server.key"),
                            "--tls-client-ca=" + self.path("ca.pem"), "--tls-require-client-cert")
        self.assertIn("client certificates required (mTLS)", server.log())
        with self.secure(server, client="client") as channel:
            self.assertAlmostEqual(self.score(channel).rewards[0], 1.1)
        with self.secure(server) as channel:  # no client certificate
            self.assert_refused(channel)
        with self.secure(server, client="rogue") as channel:  # signed by another CA
            self.assert_refused(channel)
        self.assertIsNone(server.proc.poll())

    def test_tls_misconfigurations_are_refused_at_start_naming_what_is_wrong(self):
        cases = [
            (["--tls-cert=" + self.path("server.pem")], 2, "go together"),
            (["--tls-cert=" + self.path("server.pem"), "--tls-key=" + self.path("server.key"),
              "--tls-require-client-cert"], 2, "needs client_ca_file"),
            (["--tls-client-ca=" + self.path("ca.pem")], 2, "need cert_file and key_file"),
            (["--tls-cert=/nonexistent/cert.pem", "--tls-key=" + self.path("server.key")], 1,
             "/nonexistent/cert.pem"),
            (["--tls-cert=" + self.path("server.ext"), "--tls-key=" + self.path("server.key")], 1,
             "holds no PEM block"),
        ]
        for flags, code, message in cases:
            run = subprocess.run([ARGS.binary, "serve", "--listen-address=127.0.0.1:0",
                                  "--metrics-address=127.0.0.1:0", *flags],
                                 capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            self.assertEqual(run.returncode, code, "%s: %s" % (flags, run.stdout + run.stderr))
            self.assertIn(message, run.stdout + run.stderr)

    def test_defaults_bind_loopback_disable_core_dumps_and_write_nothing(self):
        printed = subprocess.run([ARGS.binary, "serve", "--print-config"], capture_output=True,
                                 text=True, timeout=30, check=True).stdout
        self.assertIn('listen_address: "127.0.0.1:50051"', printed)
        self.assertIn('metrics_address: "127.0.0.1:9464"', printed)
        self.assertIn('http_address: ""', printed)
        self.assertIn('health_address: ""', printed)

        with tempfile.TemporaryDirectory() as scratch:
            server = harness.RunningServer(ARGS.binary, cwd=scratch,
                                           env=dict(os.environ, HOME=scratch, TMPDIR=scratch))
            self.addCleanup(server.stop)
            self.assertIn("plaintext (no TLS)", server.log())
            with open("/proc/%d/limits" % server.proc.pid) as f:
                core = [line for line in f if line.startswith("Max core file size")][0]
            self.assertEqual(core.split()[4:6], ["0", "0"], core)
            with server.channel() as channel:
                self.assertAlmostEqual(self.score(channel).rewards[0], 1.1)
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.wait(60), 0)
            self.assertEqual(os.listdir(scratch), [], "the server wrote files")


    def test_with_no_address_flags_it_listens_on_loopback_only(self):
        # The real defaults, not the harness's port 0: the API on 127.0.0.1:50051 and metrics on
        # 127.0.0.1:9464. A socket bound to 127.0.0.1 refuses 127.0.0.2 (also loopback, so this
        # needs no other interface); one bound to 0.0.0.0 would accept it.
        try:
            server = harness.RunningServer(ARGS.binary, free_ports=False)
        except RuntimeError as e:
            if "in use" in str(e) or "binding to port" in str(e):
                self.skipTest("port 50051 or 9464 is taken on this machine: %s" % e)
            raise
        self.addCleanup(server.stop)
        self.assertEqual((server.listen_address, server.port, server.metrics_port),
                         ("127.0.0.1:50051", 50051, 9464), server.log())
        with server.channel() as channel:
            self.assertEqual(health_status(channel, timeout=30), 1)
        for port in (50051, 9464):
            with socket.create_connection(("127.0.0.1", port), timeout=10):
                pass
            with self.assertRaises(ConnectionRefusedError, msg="port %d beyond 127.0.0.1" % port):
                socket.create_connection(("127.0.0.2", port), timeout=10).close()


if __name__ == "__main__":
    harness.test_main(sys.modules[__name__])

"""pytest fixtures of the rlscore package's tests. The package is imported from the build tree
(PYTHONPATH=<build>/python, as tests/python/CMakeLists.txt sets it), or from an installed wheel.

Environment: RLSCORE_BINARY, the rlscore executable (for the comparisons with a server; those
tests skip without it), and RLSCORE_PEERS_DIR, other projects' test data (tests skip without it).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))  # harness.RunningServer


@pytest.fixture(scope="session")
def engine():
    import rlscore
    return rlscore.Engine(threads=2)


@pytest.fixture(scope="session")
def server():
    binary = os.environ.get("RLSCORE_BINARY")
    if not binary or not os.path.exists(binary):
        pytest.skip("RLSCORE_BINARY is not set: no server to compare with")
    import harness
    running = harness.RunningServer(binary)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def http_server():
    """A server with its HTTP listener (OpenRLHF's and slime's endpoints)."""
    binary = os.environ.get("RLSCORE_BINARY")
    if not binary or not os.path.exists(binary):
        pytest.skip("RLSCORE_BINARY is not set: no server to compare with")
    import harness
    running = harness.RunningServer(binary, "--http-address=127.0.0.1:0")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def client(server):
    from rlscore.client import Client
    with Client(server.address) as c:
        yield c


@pytest.fixture(scope="session")
def peers_dir():
    path = os.environ.get("RLSCORE_PEERS_DIR", "")
    if not path or not os.path.isdir(path):
        pytest.skip("RLSCORE_PEERS_DIR is not set or missing: no peer test data here")
    return path

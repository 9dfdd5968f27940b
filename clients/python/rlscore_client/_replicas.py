"""The replicas a Client talks to: one gRPC channel per server, calls balanced over them.

A 64-GPU run calls several rlscore replicas behind one name. gRPC keeps one HTTP/2 connection per
channel, so a single channel to a Service pins every call to one pod; here each replica gets its
own channel, calls go round-robin over the replicas that are up, a replica that fails a call is
set aside for a cool-off while the call is retried on another, and a retry budget stops a client
from hammering a cluster that is down.

    replicas = Replicas("dns:///rlscore-headless.rl.svc.cluster.local:50051", make_channel,
                        ScoringServiceStub, clock=time.monotonic)
    endpoint = replicas.pick()            # round robin over the replicas that are up
    endpoint = replicas.pick("run-17")    # a run's calls stick to one replica (rendezvous hash)

Targets: "host:port", "unix:/path" or any other one gRPC target (one replica); several of them
as a list or separated by commas; "dns:///host:port" (or "dns:host:port"), resolved here to
every address the name has, again every `resolve_interval` seconds and whenever every replica is
set aside, so replicas that come and go are followed.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

Target = Union[str, Sequence[str]]


class Endpoint:
    """One replica: its address, channel and stub, and whether it is set aside."""

    def __init__(self, address: str, channel: Any, stub: Any):
        self.address = address
        self.channel = channel
        self.stub = stub
        self.down_until = 0.0  # clock() time before which it is not picked, if others are up
        self.failures = 0      # consecutive failed calls
        self.served = 0        # calls it answered


def split_targets(target: Target) -> List[str]:
    """The targets of `target`: a list, or a string with commas (an "ipv4:"/"ipv6:" target, a
    list of its own, stays whole)."""
    if isinstance(target, str):
        if target.startswith(("ipv4:", "ipv6:")) or "," not in target:
            parts = [target]
        else:
            parts = [t.strip() for t in target.split(",")]
    else:
        parts = [str(t).strip() for t in target]
    parts = [p for p in parts if p]
    if not parts:
        raise ValueError("no target in %r" % (target,))
    return parts


def _dns_name(target: str) -> Optional[Tuple[str, int]]:
    """(host, port) of a "dns:///host:port" or "dns:host:port" target, else None."""
    if target.startswith("dns:///"):
        rest = target[len("dns:///"):]
    elif target.startswith("dns:") and not target.startswith("dns://"):
        rest = target[len("dns:"):]
    else:
        return None
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError("%r: a dns target needs host:port" % target)
    return host.strip("[]"), int(port)


def _address(family: int, sockaddr: Tuple) -> str:
    host, port = sockaddr[0], sockaddr[1]
    return "[%s]:%d" % (host, port) if family == socket.AF_INET6 else "%s:%d" % (host, port)


class Replicas:
    """Channels to every replica of a target, and the choice of one per attempt.

    Args:
      target: see the module doc.
      make_channel: address -> grpc.Channel.
      make_stub: channel -> stub.
      clock: time.monotonic, injected for tests.
      resolve: socket.getaddrinfo, injected for tests.
      resolve_interval: seconds between resolutions of dns targets.
      cool_off, max_cool_off: a replica that failed k calls in a row is set aside for
        min(max_cool_off, cool_off * 2**(k-1)) seconds.
    """

    def __init__(self, target: Target, make_channel: Callable[[str], Any],
                 make_stub: Callable[[Any], Any], *, clock: Callable[[], float],
                 resolve: Callable[..., List] = socket.getaddrinfo,
                 resolve_interval: float = 30.0, cool_off: float = 0.5, max_cool_off: float = 30.0):
        self._targets = split_targets(target)
        self._make_channel, self._make_stub = make_channel, make_stub
        self._clock, self._resolve = clock, resolve
        self._resolve_interval = resolve_interval
        self._cool_off, self._max_cool_off = cool_off, max_cool_off
        self._lock = threading.Lock()
        self._endpoints: Dict[str, Endpoint] = {}
        self._order: List[str] = []
        self._next = 0
        self._resolved_at = float("-inf")
        self._has_dns = any(_dns_name(t) for t in self._targets)
        self._refresh()

    # --- Addresses -------------------------------------------------------------------------------

    def _addresses(self) -> List[str]:
        out: List[str] = []
        for target in self._targets:
            name = _dns_name(target)
            if name is None:
                out.append(target)
                continue
            try:
                infos = self._resolve(name[0], name[1], type=socket.SOCK_STREAM)
            except OSError:
                continue  # the name does not resolve now; other targets may
            for family, _, _, _, sockaddr in infos:
                address = _address(family, sockaddr)
                if address not in out:
                    out.append(address)
        return out

    def _refresh(self) -> None:
        """Resolves the targets again and opens channels to new addresses; closes the channels of
        addresses that are gone. REQUIRES: the lock held, or the constructor."""
        self._resolved_at = self._clock()
        addresses = self._addresses()
        if not addresses and self._endpoints:
            return  # keep what we had rather than nothing: the resolver may be down briefly
        for address in addresses:
            if address not in self._endpoints:
                channel = self._make_channel(address)
                self._endpoints[address] = Endpoint(address, channel, self._make_stub(channel))
        for address in [a for a in self._endpoints if a not in addresses]:
            self._endpoints.pop(address).channel.close()
        self._order = sorted(self._endpoints)

    @property
    def endpoints(self) -> List[Endpoint]:
        with self._lock:
            return [self._endpoints[a] for a in self._order]

    def close(self) -> None:
        with self._lock:
            for endpoint in self._endpoints.values():
                endpoint.channel.close()
            self._endpoints.clear()
            self._order = []

    # --- Choice ----------------------------------------------------------------------------------

    def pick(self, key: Optional[str] = None, avoid: Optional[Endpoint] = None) -> Endpoint:
        """The replica for the next attempt: round robin over those that are up; with `key`, the
        first that is up in the key's rendezvous order, so that a key's calls stay on one replica
        while it lives. `avoid` (the replica that just failed this call) is taken only when no
        other is left. When every replica is set aside, dns targets are resolved again and the
        one whose cool-off ends first is taken."""
        with self._lock:
            now = self._clock()
            if self._has_dns and now - self._resolved_at >= self._resolve_interval:
                self._refresh()
            up = [a for a in self._order if self._endpoints[a].down_until <= now]
            if not up and self._has_dns:
                self._refresh()
                up = [a for a in self._order if self._endpoints[a].down_until <= now]
            if not self._order:
                raise LookupError("no replica: %s resolves to no address" % ", ".join(self._targets))
            candidates = up or sorted(self._order, key=lambda a: self._endpoints[a].down_until)
            if avoid is not None and len(candidates) > 1:
                candidates = [a for a in candidates if a != avoid.address] or candidates
            if key is not None:
                ranked = sorted(self._order, key=lambda a: _rendezvous(key, a), reverse=True)
                return self._endpoints[next(a for a in ranked if a in candidates)]
            self._next = (self._next + 1) % max(1, len(self._order))
            # The next address at or after the cursor that is a candidate.
            for i in range(len(self._order)):
                address = self._order[(self._next + i) % len(self._order)]
                if address in candidates:
                    return self._endpoints[address]
            return self._endpoints[candidates[0]]

    def succeeded(self, endpoint: Endpoint) -> None:
        with self._lock:
            endpoint.failures = 0
            endpoint.down_until = 0.0
            endpoint.served += 1

    def failed(self, endpoint: Endpoint) -> None:
        """Sets `endpoint` aside after a failure its server did not choose (it is down, draining,
        or the connection broke)."""
        with self._lock:
            endpoint.failures += 1
            delay = min(self._max_cool_off, self._cool_off * 2.0 ** (endpoint.failures - 1))
            endpoint.down_until = self._clock() + delay

    def __len__(self) -> int:
        with self._lock:
            return len(self._order)


def _rendezvous(key: str, address: str) -> bytes:
    """Highest-random-weight hashing: each key ranks the replicas its own way, and a replica that
    goes moves only the keys it was first for."""
    return hashlib.blake2b((key + "\0" + address).encode(), digest_size=8).digest()


class RetryBudget:
    """gRPC's retry throttling: `tokens` start at `max_tokens`; a failed attempt takes one, a
    successful call gives back `token_ratio`; retries stop while tokens <= max_tokens / 2, so a
    cluster that fails everything is not sent (retries + 1) times the load.

    Thread-safe."""

    def __init__(self, max_tokens: float = 10.0, token_ratio: float = 0.1):
        if max_tokens <= 0 or token_ratio < 0:
            raise ValueError("retry budget: max_tokens must be > 0 and token_ratio >= 0")
        self.max_tokens, self.token_ratio = float(max_tokens), float(token_ratio)
        self._tokens = self.max_tokens
        self._lock = threading.Lock()

    def on_failure(self) -> bool:
        """Takes a token for a failed attempt; True when a retry is still allowed."""
        with self._lock:
            self._tokens = max(0.0, self._tokens - 1.0)
            return self._tokens > self.max_tokens / 2

    def on_success(self) -> None:
        with self._lock:
            self._tokens = min(self.max_tokens, self._tokens + self.token_ratio)

    @property
    def tokens(self) -> float:
        with self._lock:
            return self._tokens

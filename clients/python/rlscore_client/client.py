"""Client: the rlscore.v1 ScoringService from Python, with deadlines, retries and request splitting.

    from rlscore_client import Client, RlscoreError

    client = Client("127.0.0.1:50051")        # or "unix:/run/rlscore.sock", or several replicas:
    client = Client("dns:///rlscore-headless.rl.svc.cluster.local:50051")   # or "a:50051,b:50051"
    reply = client.score_groups(
        [{"prompt_id": "p1", "reference": "42",
          "completions": ["<think>6*7</think> \\\\boxed{42}",
                          {"text": "<think>6*7</think> \\\\boxed{41}", "num_tokens": 850,
                           "finished": True}]}],
        run_id="run-1", step=12)
    reply.rewards       # [1.1, 0.0]
    reply.advantages    # [0.707..., -0.707...]

    adv = client.compute_advantages([0.1, 0.1, 1.1, 0.1], group_sizes=[2, 2])
    stop = client.monitor_generation(engine_text_deltas(), max_tokens=16384)   # None: no STOP

Every call has a deadline (the client's `timeout`, or the call's); a call that fails raises
RlscoreError with the gRPC code and the server's message. UNAVAILABLE (no server yet, a restart,
a server draining on SIGTERM) and a busy server's refusal (RESOURCE_EXHAUSTED with the trailer
`rlscore-retryable`: its memory budget or max_concurrent_calls was held by other calls) are
retried with exponential backoff and jitter within the deadline, and so is a call whose
connection broke (a reset, a replica killed mid-call: the calls are idempotent); no other code is
retried (a limit the request itself exceeds is final).

Several replicas (a list of targets, targets separated by commas, or a "dns:///" name resolved to
every address it has): one channel per replica, calls round-robin over the replicas that are up,
and a failed attempt is retried at once on another replica (the failed one is set aside for a
cool-off), all within the call's deadline. A retry budget (gRPC's retry throttling) stops retries
while most recent attempts fail, so a cluster that is down is not sent several times its load.
A run's calls (ScoreGroups with a run_id, GetRunHealth) stick to one replica chosen by rendezvous
hashing of the run id, so its telemetry lives in one place (docs/DEPLOY.md, "Several replicas").
`stats()` counts calls, attempts, retries and what each replica answered. A unary request larger than `max_request_bytes` is split into chunks of
whole groups (or items) and the responses merged, so the caller sees one response.

Needs grpcio, protobuf and the generated rlscore stubs on sys.path (the build writes them to
build/python; see clients/python/README.md). Thread-safety: a Client may be shared by any number
of threads (gRPC channels and stubs are thread-safe; the client holds no other mutable state).
A GenerationMonitor belongs to one thread.
"""

from __future__ import annotations

import queue
import random
import re
import threading
import time
from typing import (Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import grpc

try:
    from rlscore.v1 import (advantage_pb2, monitor_pb2, scoring_pb2,
                            scoring_service_pb2_grpc)
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rlscore_client needs the generated rlscore.v1 stubs on sys.path: build the project "
        "(they are written to build/python) and set PYTHONPATH=build/python:clients/python") from e

from . import _split
from ._replicas import Replicas, RetryBudget, Target
from .errors import RlscoreError
from .requests import (GroupLike, ItemLike, _enum, _floats, _ints, score_groups_request,
                       score_request)

DEFAULT_TARGET = "127.0.0.1:50051"
# The server's default --max-message-bytes. The client's default stays 4 MiB below it: the size
# estimate of a chunk is an upper bound, and the margin leaves room for gRPC's framing.
SERVER_DEFAULT_MAX_MESSAGE_BYTES = 512 * 2**20
DEFAULT_MAX_REQUEST_BYTES = SERVER_DEFAULT_MAX_MESSAGE_BYTES - 4 * 2**20

UNSCORABLE_VERDICTS = _split.UNSCORABLE_VERDICTS

Delta = Union[str, Sequence[int], "monitor_pb2.MonitorGenerationRequest"]


class Client:
    """A connection to an rlscore server, or to several replicas. Thread-safe: share one per
    process.

    Args:
      target: `host:port`, `[::1]:port` or `unix:/path`; or several replicas: a list of those,
        the same separated by commas, or `dns:///host:port` (every address of the name).
      timeout: default deadline of a call in seconds (a split request shares one deadline).
      retries: how many times an UNAVAILABLE call, one a busy server refused, or one whose
        connection broke is sent again (so at most retries + 1 attempts).
      backoff, max_backoff: retry k (0-based) waits d_k = min(max_backoff, backoff * 2**k), with
        "equal jitter": d_k/2 + u * d_k/2 for u = rand() in [0, 1). A retry that would end past the
        deadline is not made. A retry on a replica this call has not tried yet, while it is up,
        does not wait.
      retry_budget: (max_tokens, token_ratio) of the retry throttling (see RetryBudget), or None
        for no budget.
      max_request_bytes: unary requests larger than this are split (see score_groups). Set it at
        or below the server's --max-message-bytes.
      channel_options: extra gRPC channel arguments, e.g. [("grpc.keepalive_time_ms", 10000)];
        they override the defaults, which lift gRPC Python's 4 MiB receive limit.
      credentials: grpc.ChannelCredentials for TLS; None for an insecure channel.
      sleep, clock, rand, resolve: injected time.sleep, time.monotonic, random.random and
        socket.getaddrinfo, for tests.
    """

    def __init__(self, target: Target = DEFAULT_TARGET, *, timeout: float = 60.0,
                 retries: int = 4, backoff: float = 0.1, max_backoff: float = 5.0,
                 retry_budget: Optional[Tuple[float, float]] = (10.0, 0.1),
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                 channel_options: Optional[Sequence[Tuple[str, Any]]] = None,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random,
                 resolve: Optional[Callable[..., Any]] = None):
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds, got %r" % (timeout,))
        if retries < 0 or backoff < 0 or max_backoff < 0:
            raise ValueError("retries, backoff and max_backoff must be >= 0")
        if max_request_bytes <= 0:
            raise ValueError("max_request_bytes must be > 0, got %r" % (max_request_bytes,))
        self.target = target
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_request_bytes = int(max_request_bytes)
        self._sleep, self._clock, self._rand = sleep, clock, rand
        options = {"grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1}
        options.update(dict(channel_options or ()))

        def make_channel(address: str) -> grpc.Channel:
            if credentials is None:
                return grpc.insecure_channel(address, options=list(options.items()))
            return grpc.secure_channel(address, credentials, options=list(options.items()))

        extra = {} if resolve is None else {"resolve": resolve}
        self._replicas = Replicas(target, make_channel, scoring_service_pb2_grpc.ScoringServiceStub,
                                  clock=clock, **extra)
        self._budget = RetryBudget(*retry_budget) if retry_budget is not None else None
        self._stats_lock = threading.Lock()
        self._stats = {"calls": 0, "attempts": 0, "retries": 0, "retried_calls": 0,
                       "failovers": 0, "not_retried_budget": 0}

    @property
    def _stub(self):
        """The stub of the next replica (for calls that are not retried: streams)."""
        return self._replicas.pick().stub

    def stats(self) -> dict:
        """Counters since the client was made: calls, attempts, retries (attempts after the
        first), retried_calls (calls that needed more than one attempt), failovers (retries sent
        to another replica), not_retried_budget (retries the budget refused), and per replica the
        calls it answered ({"replicas": {address: answered}})."""
        with self._stats_lock:
            out = dict(self._stats)
        out["replicas"] = {e.address: e.served for e in self._replicas.endpoints}
        return out

    def close(self) -> None:
        """Closes the channels; calls in flight are cancelled."""
        self._replicas.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- Trainers --------------------------------------------------------------------------------

    def score_groups(self, groups: Iterable[GroupLike], *, profile: str = "",
                     advantage: Union[None, Mapping[str, Any],
                                      advantage_pb2.AdvantageOptions] = None,
                     run_id: str = "", step: int = 0,
                     timeout: Optional[float] = None) -> scoring_pb2.ScoreGroupsResponse:
        """Scores groups of completions: rewards, components, verdicts and group advantages.

        `groups` are rlscore.v1.Group messages or dicts:
          {"prompt_id": str | int, "references": [str, ...] (or "reference": str), "task": "math",
           "completions": [str | {"text": str, "token_ids": [int], "num_tokens": int,
                                  "finished": bool, "external_accuracy": float}, ...]}
        `task` is a Task name ("math", "TASK_NUMERIC", ...) or value; text is sent as UTF-8.
        `advantage` overrides the profile's options: {"estimator": "grpo" | "dr_grpo" | "rloo" |
        "batch_normalized" | "reinforce_pp_baseline" | "grpo_passk" | "gdpo", "deviation":
        "sample" | "population", "zero_variance_threshold": x, "keep_band": (lo, hi)}.

        A request over max_request_bytes is sent as consecutive chunks of whole groups, one RPC
        each under the one deadline, and the responses are merged: per-completion and per-group
        fields concatenated, the batch summary recomputed (reward_mean and reward_std with the
        parallel-moments merge: equal to the unsplit call's up to rounding). Limits of splitting:
          - With run_id, every chunk is recorded as a telemetry batch of this step, and the
            server keeps one batch per step (a step sent again replaces the previous one, for
            trainers that retry): GetRunHealth sees the last chunk only. Where run health
            matters, keep a step's request under max_request_bytes (raise it together with the
            server's --max-message-bytes).
          - The batch-normalised estimator divides by the whole batch's deviation, so such a
            request cannot be split: RlscoreError RESOURCE_EXHAUSTED (also when the profile's
            default turns out to be batch-normalised, after the first chunk). The same holds
            for REINFORCE++-baseline and GDPO when the request names them (a profile default of
            either is not detected).
          - A single group over the limit: RlscoreError RESOURCE_EXHAUSTED naming it.
          - If a chunk fails, chunks before it were scored (and recorded); the error's
            chunk_offset says where the failing chunk starts.
        """
        request = score_groups_request(groups, profile, advantage, run_id, step)
        deadline = self._deadline(timeout)
        if request.ByteSize() <= self.max_request_bytes:
            return self._call("ScoreGroups", request, deadline, key=run_id or None)

        self._refuse_batch_normalized(request.advantage.estimator, request.ByteSize())
        base = scoring_pb2.ScoreGroupsRequest()
        base.CopyFrom(request)
        base.ClearField("groups")
        plan = _split.plan_chunks(
            [(_split.message_field_cost(g.ByteSize()),) for g in request.groups],
            (self.max_request_bytes - base.ByteSize(),), "groups")
        responses = []
        for start, end in plan:
            chunk = scoring_pb2.ScoreGroupsRequest()
            chunk.CopyFrom(base)
            chunk.groups.extend(request.groups[start:end])
            response = self._call("ScoreGroups", chunk, deadline, chunk_offset=start,
                                  key=run_id or None)
            if (request.advantage.estimator == advantage_pb2.ESTIMATOR_UNSPECIFIED and
                    _split.looks_batch_normalized(
                        response.rewards, [len(g.completions) for g in chunk.groups], response)):
                self._refuse_batch_normalized(advantage_pb2.ESTIMATOR_BATCH_NORMALIZED,
                                              request.ByteSize(), "the profile's default ")
            responses.append(response)
        return _split.merge_score_groups(
            responses, _split.deviation_of(request.advantage.deviation, responses))

    def compute_advantages(self, rewards: Iterable[float], group_sizes: Iterable[int], *,
                           outcomes: Optional[Iterable[Union[int, str]]] = None,
                           estimator: Union[None, int, str] = None,
                           deviation: Union[None, int, str] = None,
                           zero_variance_threshold: Optional[float] = None,
                           run_id: str = "", step: int = 0,
                           timeout: Optional[float] = None,
                           components: Any = None,
                           component_weights: Optional[Iterable[float]] = None,
                           accuracy: Optional[Iterable[float]] = None,
                           keep_band: Optional[Sequence[float]] = None
                           ) -> advantage_pb2.ComputeAdvantagesResponse:
        """Group advantages of rewards scored elsewhere (README "ComputeAdvantages").

        `rewards` (every group's, back to back) and `group_sizes` may be lists, array.array or
        numpy arrays. `outcomes` is empty or one per reward: Outcome values or names ("correct",
        "wrong", "truncated", "unscorable"). `estimator` and `deviation` as in score_groups; None
        keeps the server's default. NaN or +-Inf in a scorable reward: RlscoreError
        INVALID_ARGUMENT naming the group and position. `run_id` and `step` are sent as the API
        defines them (the server records run telemetry from ScoreGroups only, so far).
        `components` ([completions x K] rows) and `component_weights` (K, default all 1) are
        GDPO's reward components; `rewards` may then be empty. `accuracy` (one per reward) and
        `keep_band=(lo, hi)` are the keep band's (README "ComputeAdvantages").

        Split like score_groups when the request, or its response (8 bytes per reward plus about
        23 per group), would be over max_request_bytes; never for the batch-normalised estimator.
        """
        request = advantage_pb2.ComputeAdvantagesRequest(run_id=run_id, step=step)
        request.rewards.extend(_floats(rewards))
        request.group_sizes.extend(_ints(group_sizes))
        if outcomes is not None:
            request.outcomes.extend(_enum(advantage_pb2.Outcome, "OUTCOME_", o, "outcomes[%d]" % i)
                                    for i, o in enumerate(outcomes))
        if estimator is not None:
            request.options.estimator = _enum(advantage_pb2.Estimator, "ESTIMATOR_", estimator,
                                              "estimator")
        if deviation is not None:
            request.options.deviation = _enum(advantage_pb2.Deviation, "DEVIATION_", deviation,
                                              "deviation")
        if zero_variance_threshold is not None:
            request.options.zero_variance_threshold = zero_variance_threshold
        if components is not None:
            rows = [_floats(row) for row in _floats(components)]
            width = len(rows[0]) if rows else 0
            if any(len(row) != width for row in rows):
                raise ValueError("components: every row needs the same number of components")
            request.num_components = width
            for row in rows:
                request.components.extend(row)
            if component_weights is None:
                request.component_weights.extend([1.0] * width)
        if component_weights is not None:
            request.component_weights.extend(_floats(component_weights))
        if accuracy is not None:
            request.accuracy.extend(_floats(accuracy))
        if keep_band is not None:
            lo, hi = keep_band
            request.options.keep_band.lo, request.options.keep_band.hi = float(lo), float(hi)
        deadline = self._deadline(timeout)
        num_groups = len(request.group_sizes)
        response_bound = (8 * len(request.rewards) + 23 * num_groups +
                          _split.ADVANTAGES_RESPONSE_OVERHEAD)
        if (request.ByteSize() <= self.max_request_bytes and
                response_bound <= self.max_request_bytes):
            return self._call("ComputeAdvantages", request, deadline)

        self._refuse_batch_normalized(request.options.estimator,
                                      max(request.ByteSize(), response_bound))
        if request.components:  # read by GDPO only, which normalises over the whole batch
            self._refuse_batch_normalized(advantage_pb2.ESTIMATOR_GDPO,
                                          max(request.ByteSize(), response_bound))
        sizes = list(request.group_sizes)
        _check_shape(sizes, len(request.rewards), len(request.outcomes))
        base = advantage_pb2.ComputeAdvantagesRequest()
        base.CopyFrom(request)
        for field in ("rewards", "group_sizes", "outcomes", "accuracy"):
            base.ClearField(field)
        per_outcome = 1 if request.outcomes else 0  # Outcome values are single-byte varints
        per_accuracy = 8 if request.accuracy else 0
        plan = _split.plan_chunks(
            [(8 * n + _split.varint_len(n) + (per_outcome + per_accuracy) * n, 8 * n + 23)
             for n in sizes],
            (self.max_request_bytes - base.ByteSize() - 4 * _split.FIELD_OVERHEAD,
             self.max_request_bytes - _split.ADVANTAGES_RESPONSE_OVERHEAD), "groups")
        offsets = [0]
        for n in sizes:
            offsets.append(offsets[-1] + n)
        responses = []
        for start, end in plan:
            chunk = advantage_pb2.ComputeAdvantagesRequest()
            chunk.CopyFrom(base)
            first, last = offsets[start], offsets[end]
            chunk.rewards.extend(request.rewards[first:last])
            chunk.group_sizes.extend(sizes[start:end])
            if request.outcomes:
                chunk.outcomes.extend(request.outcomes[first:last])
            if request.accuracy:
                chunk.accuracy.extend(request.accuracy[first:last])
            response = self._call("ComputeAdvantages", chunk, deadline,
                                  chunk_offset=start)
            if (request.options.estimator == advantage_pb2.ESTIMATOR_UNSPECIFIED and
                    _split.looks_batch_normalized(chunk.rewards, sizes[start:end], response)):
                self._refuse_batch_normalized(advantage_pb2.ESTIMATOR_BATCH_NORMALIZED,
                                              request.ByteSize(), "the server's default ")
            responses.append(response)
        return _split.merge_compute_advantages(
            responses, _split.deviation_of(request.options.deviation, responses))

    def run_health(self, run_id: str = "", *,
                   timeout: Optional[float] = None) -> monitor_pb2.GetRunHealthResponse:
        """GetRunHealth: OK / WARN / CRITICAL per run from the ScoreGroups calls that carried a
        run_id; "" lists every tracked run. An unknown run: RlscoreError NOT_FOUND.

        With several replicas, a run's calls stick to one replica, and run_health(run_id) asks
        that one; "" asks every replica that answers and lists the runs of all of them (a run two
        replicas know, after a failover, from the one with more batches)."""
        request = monitor_pb2.GetRunHealthRequest(run_id=run_id)
        deadline = self._deadline(timeout)
        endpoints = self._replicas.endpoints
        if run_id or len(endpoints) == 1:
            return self._call("GetRunHealth", request, deadline, key=run_id or None)
        runs = {}
        answered = False
        for endpoint in endpoints:
            remaining = deadline - self._clock()
            if remaining <= 0:
                break
            try:
                reply = endpoint.stub.GetRunHealth(request, timeout=remaining)
            except grpc.RpcError:
                continue  # a replica that is down has no runs to add
            answered = True
            self._replicas.succeeded(endpoint)
            for run in reply.runs:
                if run.run_id not in runs or run.batches > runs[run.run_id].batches:
                    runs[run.run_id] = run
        if not answered:  # none answered: the usual retries and error
            return self._call("GetRunHealth", request, deadline)
        merged = monitor_pb2.GetRunHealthResponse()
        merged.runs.extend(runs[k] for k in sorted(runs))
        return merged

    # --- Evaluation pipelines --------------------------------------------------------------------

    def score(self, items: Iterable[ItemLike], *, profile: str = "",
              pass_at_k: Sequence[int] = (1,),
              timeout: Optional[float] = None) -> scoring_pb2.ScoreResponse:
        """Scores completions one by one, with an aggregate (accuracy, rates, length percentiles,
        verdict counts, pass@k over items that share a prompt id).

        `items` are rlscore.v1.ScoreItem messages or dicts:
          {"prompt_id": str | int, "completion": str | {...as in score_groups}, "references": [str]
           (or "reference": str), "task": "math"}
        Split by items like score_groups; the aggregate of a split request is recomputed from
        every item's result exactly as the server computes it.
        """
        request = score_request(items, profile, pass_at_k)
        deadline = self._deadline(timeout)
        if request.ByteSize() <= self.max_request_bytes:
            return self._call("Score", request, deadline)

        base = scoring_pb2.ScoreRequest()
        base.CopyFrom(request)
        base.ClearField("items")
        plan = _split.plan_chunks(
            [(_split.message_field_cost(item.ByteSize()),) for item in request.items],
            (self.max_request_bytes - base.ByteSize(),), "items")
        responses = []
        for start, end in plan:
            chunk = scoring_pb2.ScoreRequest()
            chunk.CopyFrom(base)
            chunk.items.extend(request.items[start:end])
            responses.append(self._call("Score", chunk, deadline, chunk_offset=start))
        return _split.merge_score(responses, [item.prompt_id for item in request.items],
                                  list(request.pass_at_k))

    # --- Inference engines -----------------------------------------------------------------------

    def monitor_generation(self, deltas: Iterable[Delta], *, profile: str = "",
                           max_tokens: int = 0, think_prefilled: bool = False, run_id: str = "",
                           prompt_id: str = "", timeout: Optional[float] = None
                           ) -> Optional[monitor_pb2.MonitorGenerationResponse]:
        """Streams one generation into MonitorGeneration; returns the STOP, or None if the
        generation ended (the iterator was exhausted) without one.

        `deltas` yields what the engine produced since the previous delta: `str` (text) or a
        sequence of token ids, not both kinds in one stream. gRPC pulls the iterator on its own
        thread while this call waits for the answer, and returns as soon as the STOP arrives:
        the iterator is then not advanced again (a next() already in progress completes on that
        thread and its delta is dropped). Abort the engine's request on return. An exception from
        the iterator ends the stream and is raised here. `max_tokens` 0 means the profile's
        maximum length. Not retried (an iterator cannot be replayed); the deadline covers the
        whole generation.
        """
        stopped = threading.Event()
        failure: List[BaseException] = []

        def requests() -> Iterator[monitor_pb2.MonitorGenerationRequest]:
            yield _start(profile, max_tokens, think_prefilled, run_id, prompt_id)
            try:
                for delta in deltas:
                    if stopped.is_set():
                        return
                    yield _delta(delta)
            except Exception as e:  # noqa: BLE001 - handed back to the caller below
                failure.append(e)  # half-closes the stream: the server ends it cleanly

        call = self._stub.MonitorGeneration(requests(), timeout=self._timeout(timeout))
        try:
            for answer in call:  # at most one: the STOP, after which the server ends the stream
                stopped.set()
                try:
                    for _ in call:  # the end follows at once; waiting for it keeps the status OK
                        pass
                except grpc.RpcError:
                    pass  # the STOP is the answer, however the stream ended after it
                return answer
        except grpc.RpcError as e:
            if failure:
                raise failure[0] from e
            raise RlscoreError.from_rpc(e) from None
        finally:
            stopped.set()
        if failure:
            raise failure[0]
        return None

    def generation_monitor(self, *, profile: str = "", max_tokens: int = 0,
                           think_prefilled: bool = False, run_id: str = "", prompt_id: str = "",
                           timeout: Optional[float] = None) -> "GenerationMonitor":
        """A MonitorGeneration stream that the caller pushes deltas into as the engine produces
        them (for engines that call back rather than yield):

            with client.generation_monitor(max_tokens=16384) as monitor:
                for delta in engine_output:
                    if monitor.push(delta) is not None:   # the STOP has arrived
                        engine.abort(request_id)
                        break
            monitor.stop     # the STOP, or None: the generation ended cleanly
        """
        return GenerationMonitor(self._stub, _start(profile, max_tokens, think_prefilled, run_id,
                                                    prompt_id),
                                 self._timeout(timeout))

    # --- Calls -----------------------------------------------------------------------------------

    def _timeout(self, timeout: Optional[float]) -> float:
        return self.timeout if timeout is None else float(timeout)

    def _deadline(self, timeout: Optional[float]) -> float:
        return self._clock() + self._timeout(timeout)

    def backoff_delay(self, retry: int) -> float:
        """Seconds before retry `retry` (0-based): equal jitter over the capped exponential."""
        cap = min(self.max_backoff, self.backoff * 2.0**retry)
        return cap / 2 + self._rand() * cap / 2

    def _count(self, **deltas: int) -> None:
        with self._stats_lock:
            for name, delta in deltas.items():
                self._stats[name] += delta

    def _call(self, method: str, request, deadline: float, *,
              chunk_offset: Optional[int] = None, key: Optional[str] = None):
        """One unary call with retries (see _retryable), all within `deadline` (a clock() time),
        on the replica `key` sticks to (round robin without one), failing over to others."""
        attempt = 0
        tried = set()
        endpoint = None
        self._count(calls=1)
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise RlscoreError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                   "the deadline passed before attempt %d" % (attempt + 1),
                                   attempts=attempt, chunk_offset=chunk_offset)
            previous = endpoint
            endpoint = self._replicas.pick(key, avoid=previous)
            if attempt > 0:
                self._count(retries=1, retried_calls=1 if attempt == 1 else 0,
                            failovers=1 if endpoint is not previous else 0)
            tried.add(endpoint.address)
            self._count(attempts=1)
            try:
                response = getattr(endpoint.stub, method)(request, timeout=remaining)
            except grpc.RpcError as e:
                attempt += 1
                code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
                details = e.details() if hasattr(e, "details") else str(e)
                if not _retryable(e, code, details):
                    raise RlscoreError(code, details or "", attempts=attempt,
                                       chunk_offset=chunk_offset) from None
                self._replicas.failed(endpoint)
                if attempt > self.retries:
                    raise RlscoreError(code, details or "", attempts=attempt,
                                       chunk_offset=chunk_offset) from None
                if self._budget is not None and not self._budget.on_failure():
                    self._count(not_retried_budget=1)
                    raise RlscoreError(
                        code, "%s; not retried: the retry budget is spent (most recent attempts "
                        "failed, the service looks down)" % details, attempts=attempt,
                        chunk_offset=chunk_offset) from None
                # Another replica that this call has not tried and that is up: at once.
                fresh = [r for r in self._replicas.endpoints
                         if r.address not in tried and r.down_until <= self._clock()]
                if fresh:
                    continue
                delay = self.backoff_delay(attempt - 1)
                if self._clock() + delay >= deadline:
                    raise RlscoreError(
                        code, "%s; not retried: the deadline would pass during the %.3gs backoff"
                        % (details, delay), attempts=attempt, chunk_offset=chunk_offset) from None
                self._sleep(delay)
            else:
                self._replicas.succeeded(endpoint)
                if self._budget is not None:
                    self._budget.on_success()
                return response

    def _refuse_batch_normalized(self, estimator: int, size: int, whose: str = "") -> None:
        # Every estimator that normalises over the whole batch: batch-normalised,
        # REINFORCE++-baseline and GDPO.
        if estimator in _BATCH_LEVEL_ESTIMATORS:
            raise RlscoreError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "the request needs %d bytes, over max_request_bytes = %d, and %sestimator is "
                "batch-normalised (%s): it divides by the deviation of the whole batch, so the "
                "request cannot be split; send fewer groups per call, raise max_request_bytes "
                "(and the server's --max-message-bytes) or choose another estimator"
                % (size, self.max_request_bytes, whose or "the ",
                   advantage_pb2.Estimator.Name(estimator)))


# The estimators whose advantages depend on the whole batch: a split request would change them.
_BATCH_LEVEL_ESTIMATORS = frozenset({advantage_pb2.ESTIMATOR_BATCH_NORMALIZED,
                                     advantage_pb2.ESTIMATOR_REINFORCE_PP_BASELINE,
                                     advantage_pb2.ESTIMATOR_GDPO})


# The trailer a busy server's refusal carries (its value names the limit): the same request may
# succeed after a backoff.
RETRYABLE_TRAILER = "rlscore-retryable"


# What gRPC reports when a connection broke under a call (a replica killed, a reset, a GOAWAY
# before the answer): the call may not have run, and the calls are idempotent, so it is retried.
_CONNECTION_BROKE = re.compile(
    r"Stream removed|Socket closed|Connection reset|connection reset|Broken pipe|RST_STREAM|"
    r"GOAWAY|failed to connect|Connection refused|EOF", re.IGNORECASE)


def _retryable(error: grpc.RpcError, code: grpc.StatusCode, details: str = "") -> bool:
    """UNAVAILABLE; RESOURCE_EXHAUSTED that the server marked retryable; UNKNOWN or INTERNAL
    that say the connection broke."""
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
        return bool(_CONNECTION_BROKE.search(details or ""))
    if code != grpc.StatusCode.RESOURCE_EXHAUSTED or not hasattr(error, "trailing_metadata"):
        return False
    return any(key == RETRYABLE_TRAILER for key, _ in (error.trailing_metadata() or ()))


class GenerationMonitor:
    """One MonitorGeneration stream fed by push(); see Client.generation_monitor.

    The STOP is read on a thread of its own, so push() never waits for the server: it returns the
    STOP once it has arrived (and from then on sends nothing more), else None. Not thread-safe:
    one producer pushes.
    """

    def __init__(self, stub, start: monitor_pb2.MonitorGenerationRequest, timeout: float):
        self._outbox: "queue.Queue[Optional[monitor_pb2.MonitorGenerationRequest]]" = queue.Queue()
        self._stop: Optional[monitor_pb2.MonitorGenerationResponse] = None
        self._error: Optional[RlscoreError] = None
        self._closed = False
        self._cancelled = False
        self._ended = threading.Event()
        self._call = stub.MonitorGeneration(self._requests(start), timeout=timeout)
        self._reader = threading.Thread(target=self._read, name="rlscore-monitor", daemon=True)
        self._reader.start()

    def _requests(self, start):
        yield start
        while True:
            item = self._outbox.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for answer in self._call:
                self._stop = answer
        except grpc.RpcError as e:
            if not self._cancelled:
                self._error = RlscoreError.from_rpc(e)
        finally:
            self._ended.set()
            self._outbox.put(None)  # frees gRPC's sending thread if it waits for more

    @property
    def stop(self) -> Optional[monitor_pb2.MonitorGenerationResponse]:
        """The STOP if it has arrived, else None. Never blocks."""
        return self._stop

    def push(self, delta: Delta) -> Optional[monitor_pb2.MonitorGenerationResponse]:
        """Sends a text or token-id delta unless the STOP has arrived; returns the STOP or None.
        Raises the stream's RlscoreError if the server ended it with an error, ValueError after
        close()."""
        if self._stop is not None:
            return self._stop
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ValueError("push() after close(): the generation is over")
        self._outbox.put(_delta(delta))
        return self._stop

    def wait(self, timeout: Optional[float] = None
             ) -> Optional[monitor_pb2.MonitorGenerationResponse]:
        """Blocks until the stream has ended (a STOP, or the end after close()) or `timeout`
        seconds passed; returns the STOP or None. Raises the stream's RlscoreError."""
        self._ended.wait(timeout)
        if self._error is not None:
            raise self._error
        return self._stop

    def close(self, timeout: Optional[float] = None
              ) -> Optional[monitor_pb2.MonitorGenerationResponse]:
        """Ends the generation (half-close), waits for the server's answer and returns the STOP,
        or None when nothing fired. Raises the stream's RlscoreError."""
        if not self._closed:
            self._closed = True
            self._outbox.put(None)
        return self.wait(timeout)

    def cancel(self) -> None:
        """Abandons the stream (no error is raised for it)."""
        self._closed = self._cancelled = True
        self._call.cancel()

    def __enter__(self) -> "GenerationMonitor":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.cancel()


def _check_shape(sizes: Sequence[int], num_rewards: int, num_outcomes: int) -> None:
    """The server's shape checks, made before a request is split (they decide the chunks)."""
    for g, n in enumerate(sizes):
        if n == 0:
            raise RlscoreError(grpc.StatusCode.INVALID_ARGUMENT,
                               "group_sizes[%d] is 0: every group needs at least one reward" % g)
    if sum(sizes) != num_rewards:
        raise RlscoreError(grpc.StatusCode.INVALID_ARGUMENT, "group_sizes sum to %d but there are "
                           "%d rewards" % (sum(sizes), num_rewards))
    if num_outcomes not in (0, num_rewards):
        raise RlscoreError(grpc.StatusCode.INVALID_ARGUMENT, "outcomes has %d entries; expected "
                           "none or one per reward (%d)" % (num_outcomes, num_rewards))


def _start(profile: str, max_tokens: int, think_prefilled: bool, run_id: str,
           prompt_id: str) -> monitor_pb2.MonitorGenerationRequest:
    return monitor_pb2.MonitorGenerationRequest(start=monitor_pb2.GenerationStart(
        profile=profile, max_tokens=max_tokens, think_prefilled=think_prefilled, run_id=run_id,
        prompt_id=prompt_id))


def _delta(delta: Delta) -> monitor_pb2.MonitorGenerationRequest:
    if isinstance(delta, monitor_pb2.MonitorGenerationRequest):
        return delta
    if isinstance(delta, str):
        return monitor_pb2.MonitorGenerationRequest(text=monitor_pb2.TextDelta(text=delta))
    if isinstance(delta, (bytes, bytearray)):
        raise TypeError("a delta is str (text) or a sequence of token ids, not bytes: decode it")
    request = monitor_pb2.MonitorGenerationRequest()
    request.tokens.token_ids.extend(_ints(delta))
    return request

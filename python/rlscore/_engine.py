"""The scoring engine in this process: the server's own code, without a server.

    import rlscore

    reply = rlscore.score_groups([{"reference": "42", "completions": [
        "<think>6*7</think> \\\\boxed{42}", "<think>6*7</think> \\\\boxed{41}"]}])
    reply.rewards, reply.advantages          # [1.1, 0.0], [0.707..., -0.707...]
    rlscore.Verdict(reply.results[1].verdict)  # Verdict.WRONG

    adv = rlscore.compute_advantages(numpy.array([0.1, 0.1, 1.1, 0.1]), [2, 2])
    adv.advantages                           # numpy array: [0, 0, 0.707..., -0.707...]

Requests are the ones the gRPC Client takes (dicts, strings, or rlscore.v1 messages) and the
answers are the same rlscore.v1 messages, equal bit for bit to a server's with the same
configuration: an Engine can stand in for a Client wherever only these calls are made (the
trainer adapters take either). The work runs on the engine's thread pool with the GIL released,
so Python threads may share one Engine.
"""

from __future__ import annotations

import enum
import os
import threading
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from rlscore.config.v1 import server_config_pb2
from rlscore.v1 import advantage_pb2, scoring_pb2
from rlscore_client.requests import (GroupLike, ItemLike, _enum, score_groups_request,
                                     score_request)

from ._native_loader import native

ConfigLike = Union[None, str, "os.PathLike[str]", Mapping[str, Any],
                   "server_config_pb2.ServerConfig"]


class Verdict(enum.IntEnum):
    """What the verifier found, as rlscore.v1.Verdict numbers the results carry."""
    UNSPECIFIED = scoring_pb2.VERDICT_UNSPECIFIED
    CORRECT = scoring_pb2.VERDICT_CORRECT
    WRONG = scoring_pb2.VERDICT_WRONG
    NO_ANSWER = scoring_pb2.VERDICT_NO_ANSWER
    UNPARSEABLE_REFERENCE = scoring_pb2.VERDICT_UNPARSEABLE_REFERENCE  # unscorable
    BUDGET_EXCEEDED = scoring_pb2.VERDICT_BUDGET_EXCEEDED  # unscorable

    @property
    def unscorable(self) -> bool:
        """True for the verdicts that leave a completion out of its group's statistics."""
        return self in (Verdict.UNPARSEABLE_REFERENCE, Verdict.BUDGET_EXCEEDED)


class ZeroVarianceCause(enum.IntEnum):
    """Why a group carries no learning signal (NONE: it has signal)."""
    NONE = advantage_pb2.ZERO_VARIANCE_CAUSE_NONE
    IDENTICAL_REWARDS = advantage_pb2.ZERO_VARIANCE_CAUSE_IDENTICAL_REWARDS
    BELOW_THRESHOLD = advantage_pb2.ZERO_VARIANCE_CAUSE_BELOW_THRESHOLD
    ALL_CORRECT = advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_CORRECT
    ALL_WRONG = advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_WRONG
    ALL_TRUNCATED = advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_TRUNCATED
    ALL_UNSCORABLE = advantage_pb2.ZERO_VARIANCE_CAUSE_ALL_UNSCORABLE
    SINGLETON = advantage_pb2.ZERO_VARIANCE_CAUSE_SINGLETON


class Advantages(NamedTuple):
    """compute_advantages' answer: numpy arrays, one entry per reward or per group."""
    advantages: Any  # float64[rewards]
    mean: Any  # float64[groups], over each group's scorable rewards
    std: Any  # float64[groups]
    zero_variance_cause: Any  # uint8[groups], ZeroVarianceCause values
    summary: advantage_pb2.BatchSummary
    # bool[groups]: the groups with signal (DAPO's dynamic-sampling filter) and, with a keep band,
    # a mean accuracy inside it.
    keep: Any


def _config_text(config: ConfigLike) -> str:
    """The server configuration (rlscore.config.v1.ServerConfig) as text format: from a file
    path, a text-format string, a dict of the same fields, or the message."""
    if config is None:
        return ""
    if isinstance(config, server_config_pb2.ServerConfig):
        from google.protobuf import text_format
        return text_format.MessageToString(config)
    if isinstance(config, Mapping):
        from google.protobuf import json_format, text_format
        try:
            message = json_format.ParseDict(config, server_config_pb2.ServerConfig())
        except json_format.ParseError as e:
            raise ValueError("config: %s" % e) from None
        return text_format.MessageToString(message)
    if isinstance(config, os.PathLike) or (isinstance(config, str) and os.path.isfile(config)):
        with open(config, encoding="utf-8") as f:
            return f.read()
    if isinstance(config, str):
        return config
    raise TypeError("config: expected a path, text, dict or rlscore.config.v1.ServerConfig, "
                    "got %s" % type(config).__name__)


class Engine:
    """rlscore's engine in this process. Thread-safe: share one per process.

    Args:
      config: the server's configuration (`rlscore serve --config`): a path to a text-format
        rlscore.config.v1.ServerConfig, its text, a dict of its fields, or the message; None is
        the built-in configuration. Profiles, limits and advantage defaults come from it; the
        listeners, TLS and GPU settings have no meaning here and are ignored.
      threads: scoring threads; 0 = the configuration's scoring_threads (one per core).

    Raises rlscore.Error (INVALID_ARGUMENT naming the setting) for a configuration the server
    would refuse.
    """

    def __init__(self, config: ConfigLike = None, *, threads: int = 0):
        self._engine = native().Engine(_config_text(config), int(threads))

    @property
    def threads(self) -> int:
        """The scoring threads."""
        return self._engine.threads

    @property
    def profiles(self) -> Sequence[str]:
        """The names of the configured reward profiles ("default" among them)."""
        return list(self._engine.profile_names())

    def profile_hash(self, profile: str = "") -> str:
        """The hash ScoreGroups reports for `profile`: equal hashes, equal rewards."""
        return self._engine.profile_hash(profile)

    def score_groups(self, groups: Iterable[GroupLike], *, profile: str = "",
                     advantage: Union[None, Mapping[str, Any],
                                      advantage_pb2.AdvantageOptions] = None,
                     run_id: str = "", step: int = 0,
                     timeout: Optional[float] = None) -> scoring_pb2.ScoreGroupsResponse:
        """Rewards, components, verdicts and group advantages of groups of completions.

        Each group is an rlscore.v1.Group or a dict such as {"reference": "42", "completions":
        ["<think>...</think> \\boxed{42}", {"text": ..., "num_tokens": 812, "finished": True}]}
        (rlscore_client.Client.score_groups lists every key); `advantage` overrides the
        profile's estimator, deviation, zero_variance_threshold or keep_band ((lo, hi)).
        `run_id`, `step` and `timeout` are accepted for the Client's signature: in process there
        is no run telemetry and no deadline.

        Raises rlscore.Error: INVALID_ARGUMENT naming the group and completion, NOT_FOUND for an
        unknown profile, RESOURCE_EXHAUSTED for a limit of the configuration.
        """
        del timeout  # the engine has no deadline in process
        request = score_groups_request(groups, profile, advantage, run_id, step)
        return scoring_pb2.ScoreGroupsResponse.FromString(
            self._engine.score_groups(request.SerializeToString()))

    def score(self, items: Iterable[ItemLike], *, profile: str = "",
              pass_at_k: Iterable[int] = (),
              timeout: Optional[float] = None) -> scoring_pb2.ScoreResponse:
        """Scores completions on their own (evaluation) and aggregates them: accuracy, format,
        repetition and truncation rates, length percentiles, verdict counts, and unbiased pass@k
        for each k in `pass_at_k` over items that share a prompt_id.

        `items` are rlscore.v1.ScoreItem messages or dicts:
          {"prompt_id": str | int, "completion": str | {...as in score_groups},
           "references": [str] (or "reference": str), "task": "math"}
        """
        del timeout
        request = score_request(items, profile, pass_at_k)
        return scoring_pb2.ScoreResponse.FromString(
            self._engine.score(request.SerializeToString()))

    def compute_advantages(self, rewards: Any, group_sizes: Any, *,
                           outcomes: Optional[Iterable[Union[int, str]]] = None,
                           estimator: Union[None, int, str] = None,
                           deviation: Union[None, int, str] = None,
                           zero_variance_threshold: Optional[float] = None,
                           components: Any = None,
                           component_weights: Any = None,
                           accuracy: Any = None,
                           keep_band: Optional[Sequence[float]] = None) -> Advantages:
        """Group-relative advantages of packed `rewards` (anything numpy reads as float64: a
        float64 array is read in place) in groups of `group_sizes`, with the zero-variance clamp.

        `outcomes`, one per reward, name what is known of each completion ("correct", "wrong",
        "truncated", "unscorable", or rlscore.v1.Outcome values): an unscorable entry is left out
        of its group's statistics, the others only name a clamped group's cause. `estimator`
        ("grpo", "dr_grpo", "rloo", "batch_normalized", "reinforce_pp_baseline", "grpo_passk",
        "gdpo"), `deviation` and `zero_variance_threshold` override the configuration's defaults.

        GDPO reads `components`, a [completions x K] matrix of reward components (a 2-D array,
        like TRL's rewards_per_func), and `component_weights` (K values, default all 1); `rewards`
        may then be None: each completion's reward is the weighted sum of its components.
        `keep_band=(lo, hi)` keeps only the groups with signal whose mean accuracy is in
        [lo, hi]: of `accuracy` (one per reward) when given, else of the outcomes, else the mean
        reward. It changes `keep`, never an advantage.

        Raises rlscore.Error INVALID_ARGUMENT naming the group and position of a NaN or infinite
        reward, component or accuracy, or a bad shape (sizes that do not sum to the rewards, an
        empty group, a components matrix that does not match the rewards or the weights).
        """
        import numpy
        if components is not None:
            matrix = numpy.asarray(components, dtype=numpy.float64)
            if matrix.ndim != 2:
                raise ValueError("components: expected a [completions x K] matrix, got %d "
                                 "dimension(s)" % matrix.ndim)
            num_components = matrix.shape[1]
            component_values = numpy.ascontiguousarray(matrix).reshape(-1)
            weight_values = (numpy.ones(num_components) if component_weights is None else
                             numpy.asarray(component_weights, dtype=numpy.float64).reshape(-1))
        else:
            num_components = 0
            component_values = numpy.zeros(0)
            weight_values = (numpy.zeros(0) if component_weights is None else
                             numpy.asarray(component_weights, dtype=numpy.float64).reshape(-1))
        if rewards is None:
            rewards = numpy.zeros(0)
        options = advantage_pb2.AdvantageOptions()
        if estimator is not None:
            options.estimator = _enum(advantage_pb2.Estimator, "ESTIMATOR_", estimator,
                                      "estimator")
        if deviation is not None:
            options.deviation = _enum(advantage_pb2.Deviation, "DEVIATION_", deviation,
                                      "deviation")
        if zero_variance_threshold is not None:
            options.zero_variance_threshold = float(zero_variance_threshold)
        if keep_band is not None:
            lo, hi = keep_band
            options.keep_band.lo, options.keep_band.hi = float(lo), float(hi)
        accuracy_values = (numpy.zeros(0) if accuracy is None else
                           numpy.asarray(accuracy, dtype=numpy.float64))
        outcome_values = numpy.zeros(0, dtype=numpy.uint8)
        if outcomes is not None:
            outcome_values = numpy.fromiter(
                (_enum(advantage_pb2.Outcome, "OUTCOME_", o, "outcomes[%d]" % i)
                 for i, o in enumerate(outcomes)), dtype=numpy.uint8)
        sizes = numpy.asarray(group_sizes)
        if sizes.size and (sizes.min() < 0 or sizes.max() > 0xFFFFFFFF):
            raise ValueError("group_sizes: every size must be in [0, 2^32)")
        advantages, mean, std, causes, summary, keep = self._engine.compute_advantages(
            numpy.asarray(rewards, dtype=numpy.float64), sizes.astype(numpy.uint32, copy=False),
            options.SerializeToString(), outcome_values, component_values, num_components,
            weight_values, accuracy_values)
        return Advantages(advantages, mean, std, causes,
                          advantage_pb2.BatchSummary.FromString(summary), keep)


_default_lock = threading.Lock()
_default: Optional[Engine] = None


def default_engine() -> Engine:
    """The process's Engine with the built-in configuration, made on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Engine()
    return _default


def score_groups(groups: Iterable[GroupLike], *, engine: Optional[Engine] = None,
                 **kwargs: Any) -> scoring_pb2.ScoreGroupsResponse:
    """Engine.score_groups on `engine`, by default the built-in configuration's."""
    return (engine or default_engine()).score_groups(groups, **kwargs)


def score(items: Iterable[ItemLike], *, engine: Optional[Engine] = None,
          **kwargs: Any) -> scoring_pb2.ScoreResponse:
    """Engine.score on `engine`, by default the built-in configuration's."""
    return (engine or default_engine()).score(items, **kwargs)


def compute_advantages(rewards: Any, group_sizes: Any, *, engine: Optional[Engine] = None,
                       **kwargs: Any) -> Advantages:
    """Engine.compute_advantages on `engine`, by default the built-in configuration's."""
    return (engine or default_engine()).compute_advantages(rewards, group_sizes, **kwargs)

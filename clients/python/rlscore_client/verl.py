"""compute_score and compute_score_batch: rlscore as verl's custom reward function.

verl's NaiveRewardManager calls `compute_score(data_source=..., solution_str=...,
ground_truth=..., extra_info=...)` once per response and takes a float or a dict with "score"
(every key of the dict goes to reward_extra_info, one list per key, so every call returns the
same numeric keys). The BatchRewardManager calls a batch function once with lists:
`compute_score_batch(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=...)`.

    # PPO/GRPO config (Hydra overrides):
    custom_reward_function.path=clients/python/rlscore_client/verl.py
    custom_reward_function.name=compute_score                     # per response, or:
    reward_model.reward_manager=batch custom_reward_function.name=compute_score_batch

    # Environment of the workers:
    RLSCORE_TARGET=127.0.0.1:50051  RLSCORE_PROFILE=dapo
    PYTHONPATH=<repo>/build/python:<repo>/clients/python

Each call is one Score request (a batch call: one request for the batch). The module-level
functions share one Client per process, created on first use from RLSCORE_TARGET (default
127.0.0.1:50051) and RLSCORE_PROFILE (default: the server's default profile); a forked child
creates its own. `ground_truth` is a string or a list of equivalent strings, or for
instruction-following data an IFEval instruction list ({"instruction_id_list": [...],
"kwargs": [...]}, or its JSON text), scored as task IF. The returned dict:

    {"score": total reward, "accuracy", "format", "repetition", "length": the components,
     "num_tokens", "truncated", "format_gated", "unscorable": 0.0 / 1.0 flags}

An unscorable completion (reference unparseable, budget exceeded) scores its total (0 for the
default profile) with unscorable = 1.0: verl has no "no reward" value.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence

if __package__ in (None, ""):  # loaded by path (verl's custom_reward_function.path)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from rlscore_client.client import DEFAULT_TARGET, UNSCORABLE_VERDICTS, Client
    from rlscore_client.requests import as_references
else:
    from .client import DEFAULT_TARGET, UNSCORABLE_VERDICTS, Client
    from .requests import as_references

TARGET_ENV = "RLSCORE_TARGET"
PROFILE_ENV = "RLSCORE_PROFILE"

_lock = threading.Lock()
_shared: Optional[tuple] = None  # (pid, Client, profile)


def shared_client() -> tuple:
    """(Client, profile) of this process, created from the environment on first use."""
    global _shared
    with _lock:
        if _shared is None or _shared[0] != os.getpid():
            client = Client(os.environ.get(TARGET_ENV) or DEFAULT_TARGET)
            _shared = (os.getpid(), client, os.environ.get(PROFILE_ENV, ""))
        return _shared[1], _shared[2]


def reset_shared_client() -> None:
    """Drops this process's client: the next call reads the environment again (tests)."""
    global _shared
    with _lock:
        if _shared is not None and _shared[0] == os.getpid():
            _shared[1].close()
        _shared = None


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, float]:
    """The reward of one response, as verl's NaiveRewardManager expects (see the module doc)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any],
                        extra_infos: Optional[Sequence[Optional[Dict[str, Any]]]] = None,
                        **kwargs: Any) -> List[Dict[str, float]]:
    """The rewards of a batch, as verl's BatchRewardManager expects: one dict per response."""
    client, profile = shared_client()
    return score_dicts(client, profile, solution_strs, ground_truths)


def score_dicts(scorer: Any, profile: str, solution_strs: Sequence[str],
                ground_truths: Sequence[Any]) -> List[Dict[str, float]]:
    """One Score call on `scorer` (a Client, or an in-process rlscore.Engine): verl's dicts."""
    if len(solution_strs) != len(ground_truths):
        raise ValueError("%d solution_strs for %d ground_truths" % (
            len(solution_strs), len(ground_truths)))
    response = scorer.score(
        [_item(text, truth) for text, truth in zip(solution_strs, ground_truths)], profile=profile)
    return [_score_dict(reward, result) for reward, result in zip(response.rewards,
                                                                  response.results)]


def _item(text: str, truth: Any) -> Dict[str, Any]:
    """A Score item. An instruction-following row's ground truth (a dict with an
    instruction_id_list, or its JSON text) is scored as task IF."""
    if isinstance(truth, str) and truth.lstrip().startswith("{") and "instruction_id_list" in truth:
        try:
            truth = json.loads(truth)
        except ValueError:
            pass  # not JSON after all: an answer that happens to look like it
    if isinstance(truth, Mapping) and "instruction_id_list" in truth:
        return {"completion": text, "instruction_id_list": truth["instruction_id_list"],
                "kwargs": truth.get("kwargs")}
    return {"completion": text, "references": as_references(truth)}


def _score_dict(reward: float, result) -> Dict[str, float]:
    c = result.components
    return {
        "score": reward,
        "accuracy": c.accuracy,
        "format": c.format,
        "repetition": c.repetition,
        "length": c.length,
        "num_tokens": float(result.num_tokens),
        "truncated": float(result.anatomy.truncated),
        "format_gated": float(result.format_gated),
        "unscorable": float(result.verdict in UNSCORABLE_VERDICTS),
    }

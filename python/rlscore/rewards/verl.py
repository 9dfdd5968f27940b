"""compute_score and compute_score_batch for verl, scoring in process.

    # PPO/GRPO config (Hydra overrides); the file is importable once rlscore is installed:
    custom_reward_function.path=<site-packages>/rlscore/rewards/verl.py
    custom_reward_function.name=compute_score                  # per response, or:
    reward_model.reward_manager=batch custom_reward_function.name=compute_score_batch

verl's NaiveRewardManager calls compute_score(data_source=..., solution_str=...,
ground_truth=..., extra_info=...) per response; the BatchRewardManager calls
compute_score_batch(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=...).
Each returns rlscore_client.verl's dict: {"score", "accuracy", "format", "repetition", "length",
"num_tokens", "truncated", "format_gated", "unscorable"}. The engine is the process's (one per
worker, made on first use; RLSCORE_CONFIG names a configuration file and RLSCORE_PROFILE a
profile). With RLSCORE_TARGET set, the calls go to that server instead.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Sequence

from rlscore_client.verl import score_dicts

from .._engine import Engine

CONFIG_ENV = "RLSCORE_CONFIG"
PROFILE_ENV = "RLSCORE_PROFILE"
TARGET_ENV = "RLSCORE_TARGET"

_lock = threading.Lock()
_shared: Optional[tuple] = None  # (pid, scorer, profile)


def shared_scorer() -> tuple:
    """(scorer, profile) of this process from the environment, made on first use (a forked
    child makes its own)."""
    global _shared
    with _lock:
        if _shared is None or _shared[0] != os.getpid():
            target = os.environ.get(TARGET_ENV)
            if target:
                from rlscore_client import Client
                scorer: Any = Client(target)
            else:
                scorer = Engine(os.environ.get(CONFIG_ENV) or None)
            _shared = (os.getpid(), scorer, os.environ.get(PROFILE_ENV, ""))
        return _shared[1], _shared[2]


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, float]:
    """The reward of one response, as verl's NaiveRewardManager expects."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any],
                        extra_infos: Optional[Sequence[Optional[Dict[str, Any]]]] = None,
                        **kwargs: Any) -> List[Dict[str, float]]:
    """The rewards of a batch, as verl's BatchRewardManager expects: one dict per response."""
    scorer, profile = shared_scorer()
    return score_dicts(scorer, profile, solution_strs, ground_truths)

"""rm and batched_rm for slime's custom reward model, scoring in process.

    # slime:  --custom-rm-path rlscore.rewards.slime.rm
    #     or: --custom-rm-path rlscore.rewards.slime.batched_rm  --group-rm

slime awaits rm(args, sample) per sample (or batched_rm(args, samples) per group) and takes a
float. A sample carries the response (`sample.response`) and the reference (`sample.label`, a
string or a list of equivalent strings). The reward is the total (accuracy, gated format,
repetition, length); scoring runs on the engine's threads, off the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional, Sequence

from rlscore_client.requests import as_references

from .._engine import default_engine


def _items(samples: Sequence[Any]) -> List[dict]:
    return [{"completion": getattr(s, "response", "") or "",
             "references": as_references(getattr(s, "label", None))} for s in samples]


def score_samples(samples: Sequence[Any], engine: Optional[Any] = None,
                  profile: str = "") -> List[float]:
    """The rewards of `samples`, synchronously."""
    scorer = engine if engine is not None else default_engine()
    return list(scorer.score(_items(samples), profile=profile).rewards)


async def rm(args: Any, sample: Any, **kwargs: Any) -> float:
    """The reward of one sample."""
    profile = getattr(args, "rlscore_profile", "") or ""
    return (await asyncio.to_thread(score_samples, [sample], None, profile))[0]


async def batched_rm(args: Any, samples: Sequence[Any], **kwargs: Any) -> List[float]:
    """The rewards of a group of samples, in one call."""
    profile = getattr(args, "rlscore_profile", "") or ""
    return await asyncio.to_thread(score_samples, list(samples), None, profile)

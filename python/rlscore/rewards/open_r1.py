"""open-r1's reward function names and signatures, on rlscore's scorers.

    from rlscore.rewards.open_r1 import accuracy_reward, format_reward, tag_count_reward
    trainer = GRPOTrainer(..., reward_funcs=[accuracy_reward, format_reward])

`completions` are strings or chat lists ([{"role": "assistant", "content": ...}]), as TRL passes
them; `solution` is the dataset's reference column. What each returns:
  accuracy_reward   1.0 / 0.0 by rlscore's verifier; None when the completion is unscorable (the
                    reference does not parse, a budget ran out), as open-r1 returns None when
                    its gold does not parse.
  format_reward     1.0 for a well-formed completion (closed reasoning, an answer after it). With
                    the `solution` column it is accuracy-gated, as rlscore's format reward is:
                    1.0 only when the answer is also right. open-r1's ungated format reward is
                    what a model learned to collect without ever answering in the incident this
                    project answers; pass the column.
  tag_count_reward  open-r1's own: 0.25 for each of "<think>\\n", "\\n</think>\\n", "\\n<answer>\\n"
                    and "\\n</answer>" that occurs exactly once.
  get_repetition_penalty_reward(ngram_size, max_penalty)
                    max_penalty (<= 0) for a completion whose repetition rule fires (a loop, by
                    rlscore's loop rule, docs/REPETITION.md), else 0.0. ngram_size is accepted;
                    the rule's n-gram is the profile's.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from rlscore_client.requests import as_references
from rlscore_client.trl import completion_text

from .._engine import Verdict, default_engine

__all__ = ["accuracy_reward", "format_reward", "tag_count_reward",
           "get_repetition_penalty_reward"]


def _score(completions: Sequence[Any], references: Optional[Sequence[Any]], engine: Any):
    scorer = engine if engine is not None else default_engine()
    items = []
    for i, c in enumerate(completions):
        item = {"completion": completion_text(c)}
        if references is not None:
            item["references"] = as_references(references[i])
        items.append(item)
    return scorer.score(items).results


def accuracy_reward(completions: Sequence[Any], solution: Sequence[Any], engine: Any = None,
                    **kwargs: Any) -> List[Optional[float]]:
    """1.0 when the completion's final answer equals the solution, 0.0 when not, None when
    unscorable."""
    if len(solution) != len(completions):
        raise ValueError("%d solutions for %d completions" % (len(solution), len(completions)))
    return [None if Verdict(r.verdict).unscorable else r.components.accuracy
            for r in _score(completions, solution, engine)]


def format_reward(completions: Sequence[Any], engine: Any = None, **kwargs: Any) -> List[float]:
    """1.0 for a well-formed completion; with a `solution` column, only when it is also right."""
    solution = kwargs.get("solution")
    results = _score(completions, solution, engine)
    if solution is None:
        return [1.0 if r.anatomy.well_formed else 0.0 for r in results]
    return [1.0 if r.components.format > 0 else 0.0 for r in results]


def _count_tags(text: str) -> float:
    return 0.25 * sum(text.count(tag) == 1
                      for tag in ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"))


def tag_count_reward(completions: Sequence[Any], **kwargs: Any) -> List[float]:
    """open-r1's tag count: 0.25 per expected tag that occurs exactly once."""
    return [_count_tags(completion_text(c)) for c in completions]


def get_repetition_penalty_reward(ngram_size: int = 8, max_penalty: float = -1.0,
                                  language: str = "en",
                                  engine: Any = None) -> Callable[..., List[float]]:
    """A reward function: `max_penalty` for a completion whose repetition rule fires, else 0."""
    if max_penalty > 0:
        raise ValueError("max_penalty %r should not be positive" % (max_penalty,))
    del ngram_size, language

    def repetition_penalty_reward(completions: Sequence[Any], **kwargs: Any) -> List[float]:
        return [float(max_penalty) if r.components.repetition < 0 else 0.0
                for r in _score(completions, None, engine)]

    return repetition_penalty_reward

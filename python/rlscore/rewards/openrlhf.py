"""reward_func for OpenRLHF's --remote_rm_url, scoring in process.

    # train_ppo_ray / GRPO:  --remote_rm_url <site-packages>/rlscore/rewards/openrlhf.py

OpenRLHF loads the file and calls reward_func(queries, prompts, labels): `queries` are prompts
with their responses appended, `labels` the reference answers (--label_key). The request is the
one the server's POST /get_reward builds (README, "OpenRLHF and slime"), and so is the answer:
  - a response is what follows its prompt in the query (the whole query when the prompt is not
    in it), with trailing end-of-sequence markers removed ("<|im_end|>", "</s>", ...: the
    generation finished);
  - consecutive samples of the same prompt and label form a group (GRPO's samples of a prompt);
  - {"rewards": tensor, "scores": tensor, "extra_logs": {"rlscore_accuracy", "rlscore_format",
    "rlscore_repetition", "rlscore_length", "rlscore_truncated", "rlscore_num_tokens"}}:
    "rewards" feed the advantages, "scores" (the accuracy) OpenRLHF's dynamic filtering.
Tensors are torch's when torch is importable, else lists of floats.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from rlscore_client.requests import as_references

from .._engine import default_engine

# As the HTTP endpoint strips them (http/rewards.cc).
END_OF_SEQUENCE = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>",
                   "<|eom_id|>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<|end|>", "<eos>",
                   "<end_of_turn>")


def response_of(query: str, prompt: Optional[str]) -> str:
    """The response in `query`: what follows `prompt` (its first occurrence), else the query."""
    if not prompt:
        return query
    at = query.find(prompt)
    return query if at < 0 else query[at + len(prompt):]


def strip_end_of_sequence(text: str):
    """(text without trailing blanks and end-of-sequence markers, whether a marker was there)."""
    stripped = False
    while True:
        text = text.rstrip(" \t\r\n")
        marker = next((m for m in END_OF_SEQUENCE if text.endswith(m)), None)
        if marker is None:
            return text, stripped
        text, stripped = text[:-len(marker)], True


def _tensor(values: List[float]):
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


def reward_func(queries: Sequence[str], prompts: Optional[Sequence[str]] = None,
                labels: Optional[Sequence[Any]] = None, engine: Optional[Any] = None,
                profile: str = "", **kwargs: Any) -> Dict[str, Any]:
    """Rewards of OpenRLHF's batch: one per query."""
    n = len(queries)
    for name, values in (("prompts", prompts), ("labels", labels)):
        if values is not None and len(values) != n:
            raise ValueError("%d %s for %d queries: expected one per query" % (
                len(values), name, n))
    groups: List[dict] = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else None
        label = labels[i] if labels is not None else None
        same_group = (bool(groups) and prompt is not None and prompt == prompts[i - 1] and
                      (labels is None or label == labels[i - 1]))
        if not same_group:
            group = {"references": as_references(label), "completions": []}
            if prompt is not None:
                group["prompt_id"] = "openrlhf/%d" % i
            groups.append(group)
        text, finished = strip_end_of_sequence(response_of(query, prompt))
        completion = {"text": text}
        if finished:
            completion["finished"] = True
        groups[-1]["completions"].append(completion)
    scorer = engine if engine is not None else default_engine()
    response = scorer.score_groups(groups, profile=profile)
    results = response.results
    return {
        "rewards": _tensor(list(response.rewards)),
        "scores": _tensor([r.components.accuracy for r in results]),
        "extra_logs": {
            "rlscore_accuracy": _tensor([r.components.accuracy for r in results]),
            "rlscore_format": _tensor([r.components.format for r in results]),
            "rlscore_repetition": _tensor([r.components.repetition for r in results]),
            "rlscore_length": _tensor([r.components.length for r in results]),
            "rlscore_truncated": _tensor([1.0 if r.anatomy.truncated else 0.0 for r in results]),
            "rlscore_num_tokens": _tensor([float(r.num_tokens) for r in results]),
        },
    }

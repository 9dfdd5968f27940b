"""RlscoreReward: rlscore as a reward function of TRL's GRPOTrainer.

    from trl import GRPOConfig, GRPOTrainer
    from rlscore_client.trl import RlscoreReward

    reward = RlscoreReward(target="127.0.0.1:50051", run_id="qwen-32b-grpo",
                           max_completion_length=16384)        # the GRPOConfig's
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], args=GRPOConfig(...),
                          train_dataset=dataset)                # a "solution" column, say

TRL calls a reward function as f(prompts=[...], completions=[...], completion_ids=[[int]],
trainer_state=..., **columns): one entry per completion, the dataset's other columns as lists
(each prompt's row repeated for its completions), and uses the function's __name__ in its logs.
It sums what the reward functions return, skipping None. Each call here is one ScoreGroups
request: consecutive completions of the same prompt form a group (TRL samples num_generations
of each prompt side by side), so the server's zero-variance and run-health telemetry sees real
groups; with `run_id`, GetRunHealth follows the run step by step (trainer_state.global_step).
Under data parallelism each process scores its own slice, so a group split between processes
reaches the server as two smaller groups; the rewards do not change, except under a profile
whose length shape is computed within each group (SHAPE_KIMI). The server keeps one
telemetry batch per (run_id, step), the last one sent: give each process its own run_id (e.g.
with its rank) or a run_id on one process only, so that run health sees whole batches.

Returns each completion's total reward (accuracy + gated format + repetition + length), or None
for an unscorable verdict (reference unparseable, budget exceeded): TRL then leaves this function
out for that completion. TRL computes advantages itself, from these rewards.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Union

from .client import DEFAULT_TARGET, UNSCORABLE_VERDICTS, Client
from .requests import as_references

REFERENCE_COLUMNS = ("solution", "answer", "ground_truth", "reference")


class RlscoreReward:
    """A GRPOTrainer reward function backed by an rlscore server.

    Args:
      client: a Client to share; by default one is created for `target`.
      target: the server's address when no client is given.
      profile: the reward profile ("" = the server's default).
      reference_column: the dataset column with each prompt's reference answer (a string or a
        list of equivalent strings); by default the first of REFERENCE_COLUMNS present.
      task: a Task name ("math", "numeric", "multiple_choice", "exact") or value for every
        group; None = the profile's.
      run_id: sent with each batch so that GetRunHealth tracks the run; "" = no telemetry.
      max_completion_length: the trainer's; a completion with this many completion_ids is
        reported as truncated (not finished). None leaves truncation to the server (L >= L_max).
      timeout: the deadline of each call in seconds; None = the client's.
      name: the __name__ TRL logs the reward under.

    After a call, `last_response` holds the ScoreGroupsResponse (components, verdicts, anatomy).
    Not thread-safe (TRL calls reward functions from one thread); the client it uses is.
    """

    def __init__(self, client: Optional[Client] = None, *, target: str = DEFAULT_TARGET,
                 profile: str = "", reference_column: Optional[str] = None,
                 task: Union[None, int, str] = None, run_id: str = "",
                 max_completion_length: Optional[int] = None, timeout: Optional[float] = None,
                 name: str = "rlscore"):
        self.client = client if client is not None else Client(target)
        self.profile = profile
        self.reference_column = reference_column
        self.task = task
        self.run_id = run_id
        self.max_completion_length = max_completion_length
        self.timeout = timeout
        self.__name__ = name
        self.last_response = None

    def __call__(self, prompts: Optional[Sequence[Any]] = None,
                 completions: Optional[Sequence[Any]] = None,
                 completion_ids: Optional[Sequence[Sequence[int]]] = None,
                 **kwargs: Any) -> List[Optional[float]]:
        if completions is None:
            raise TypeError("%s: called without completions" % self.__name__)
        n = len(completions)
        references = self._references(kwargs, n)
        if prompts is not None and len(prompts) != n:
            raise ValueError("%s: %d prompts for %d completions" % (self.__name__, len(prompts), n))
        if completion_ids is not None and len(completion_ids) != n:
            raise ValueError("%s: %d completion_ids for %d completions" % (
                self.__name__, len(completion_ids), n))

        groups: List[dict] = []
        for i in range(n):
            completion = {"text": completion_text(completions[i])}
            if completion_ids is not None and completion_ids[i] is not None:
                ids = completion_ids[i]
                ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
                completion["token_ids"] = ids
                if self.max_completion_length is not None:
                    completion["finished"] = len(ids) < self.max_completion_length
            same_prompt = (i > 0 and prompts is not None and prompts[i] == prompts[i - 1] and
                           references[i] == references[i - 1])
            if not same_prompt:
                group = {"references": references[i], "completions": []}
                if self.task is not None:
                    group["task"] = self.task
                groups.append(group)
            groups[-1]["completions"].append(completion)

        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", 0) or 0
        response = self.client.score_groups(groups, profile=self.profile, run_id=self.run_id,
                                            step=int(step), timeout=self.timeout)
        self.last_response = response
        return [None if result.verdict in UNSCORABLE_VERDICTS else reward
                for reward, result in zip(response.rewards, response.results)]

    def _references(self, columns: Mapping[str, Any], n: int) -> List[List[str]]:
        """Each completion's references, from the reference column."""
        name = self.reference_column
        if name is None:
            name = next((c for c in REFERENCE_COLUMNS if c in columns), None)
            if name is None:
                raise ValueError(
                    "%s: no reference column: the dataset has none of %s (columns passed: %s); "
                    "set reference_column" % (self.__name__, ", ".join(REFERENCE_COLUMNS),
                                              ", ".join(sorted(columns)) or "none"))
        elif name not in columns:
            raise ValueError("%s: the dataset has no column %r (columns passed: %s)" % (
                self.__name__, name, ", ".join(sorted(columns)) or "none"))
        values = columns[name]
        if len(values) != n:
            raise ValueError("%s: column %r has %d values for %d completions" % (
                self.__name__, name, len(values), n))
        return [as_references(v) for v in values]


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string (standard datasets), or for conversational
    datasets a list of messages, whose assistant contents are concatenated (a content may be a
    string or a list of parts, of which the text parts count)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    parts = []
    for message in completion:
        if message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content") or ""
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(p.get("text", "") for p in content
                         if isinstance(p, Mapping) and p.get("type", "text") == "text")
    return "".join(parts)

"""RlscoreReward for TRL's GRPOTrainer, scoring in process.

    from trl import GRPOTrainer
    from rlscore.rewards.trl import RlscoreReward

    trainer = GRPOTrainer(model=..., reward_funcs=[RlscoreReward(max_completion_length=4096)],
                          train_dataset=dataset)          # with a "solution" column, say

TRL calls f(prompts=[...], completions=[...], completion_ids=[[int]], trainer_state=...,
**columns) and sums what its reward functions return, skipping None. Consecutive completions of
one prompt form a group; each completion gets its total reward, or None when it is unscorable
(reference unparseable, budget exceeded). The calling convention and the column handling are
rlscore_client.trl's (its docstring has the details); only the default scorer differs.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from rlscore_client.trl import REFERENCE_COLUMNS, completion_text
from rlscore_client.trl import RlscoreReward as _RemoteReward

from .._engine import default_engine

__all__ = ["RlscoreReward", "REFERENCE_COLUMNS", "completion_text"]


class RlscoreReward(_RemoteReward):
    """A GRPOTrainer reward function. `engine` is an rlscore.Engine (default: the process's, with
    the built-in configuration) or an rlscore.client.Client; the other arguments are
    rlscore_client.trl.RlscoreReward's."""

    def __init__(self, engine: Optional[Any] = None, *, profile: str = "",
                 reference_column: Optional[str] = None, task: Union[None, int, str] = None,
                 run_id: str = "", max_completion_length: Optional[int] = None,
                 name: str = "rlscore"):
        super().__init__(engine if engine is not None else default_engine(), profile=profile,
                         reference_column=reference_column, task=task, run_id=run_id,
                         max_completion_length=max_completion_length, name=name)


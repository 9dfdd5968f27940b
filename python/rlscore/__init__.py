"""rlscore: verified rewards, repetition and length penalties and group advantages for RL
post-training, in process (the engine of the rlscore server, without the server) or from a
server (rlscore.client).

    import rlscore

    reply = rlscore.score_groups([{"reference": "42", "completions": [
        "<think>6*7</think> \\\\boxed{42}", "<think>6*7</think> \\\\boxed{41}"]}])
    reply.rewards            # [1.1, 0.0]: the accuracy-gated format reward
    reply.advantages         # [0.707..., -0.707...]

    from rlscore.math_verify import parse, verify        # Math-Verify's API
    verify(parse("$\\\\frac12$"), parse("The answer is $0.5$"))   # True

Reward functions with each trainer's calling convention: rlscore.rewards (TRL, open-r1, verl,
OpenRLHF, slime). Errors: rlscore.Error with the status code and a message naming the item.
"""

from ._engine import (Advantages, Engine, Verdict, ZeroVarianceCause, compute_advantages,
                      default_engine, score, score_groups)
from ._errors import Error

__version__ = "0.1.0"

__all__ = ["Advantages", "Engine", "Error", "Verdict", "ZeroVarianceCause", "compute_advantages",
           "default_engine", "score", "score_groups"]

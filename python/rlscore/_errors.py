"""rlscore.Error: what the engine raises for a request it cannot score."""

from __future__ import annotations


class Error(Exception):
    """A request the engine refused, with the status code and the message naming what was wrong
    and where ("groups[3].completions[1]: ...", "reward at group 0, position 1 (flat index 1) is
    NaN").

    Attributes:
      code: the status code name: "INVALID_ARGUMENT" (bad input), "RESOURCE_EXHAUSTED" (a limit),
        "NOT_FOUND" (an unknown profile), ... The same codes the server answers with.
      message: the engine's message, verbatim.

    Model output never raises: a completion that cannot be graded gets a verdict
    (NO_ANSWER, BUDGET_EXCEEDED, ...). Programming errors in what the caller passes (a misspelled
    key, a wrong type) are TypeError or ValueError, raised before anything is scored.
    """

    def __init__(self, code: str, message: str):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)

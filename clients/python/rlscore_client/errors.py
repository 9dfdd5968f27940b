"""RlscoreError: the one exception type of rlscore_client for failed calls.

    try:
        client.compute_advantages([0.1, float("nan")], [2])
    except RlscoreError as e:
        e.code      # grpc.StatusCode.INVALID_ARGUMENT
        e.message   # "reward at group 0, position 1 (flat index 1) is NaN: ..."
        str(e)      # "INVALID_ARGUMENT: reward at group 0, position 1 ..."

Programming errors in what the caller passes (a misspelled key, a wrong type) are TypeError or
ValueError instead, raised before anything is sent.
"""

from __future__ import annotations

from typing import Optional

import grpc


class RlscoreError(Exception):
    """A call that failed, with the gRPC status code and the server's message.

    Attributes:
      code: a grpc.StatusCode. Codes the server returns (INVALID_ARGUMENT naming the group and
        position, RESOURCE_EXHAUSTED naming the limit, NOT_FOUND for an unknown profile, ...), the
        transport's (UNAVAILABLE, DEADLINE_EXCEEDED), or the client's own RESOURCE_EXHAUSTED when a
        request cannot be split under max_request_bytes.
      message: the status details string, verbatim.
      attempts: how many times the call was sent (more than 1 after retries on UNAVAILABLE).
      chunk_offset: for a request the client split, the index of the first group (or item) of the
        chunk that failed: group (item) indices in `message` count from there, flat reward indices
        from that group's first reward. None for an unsplit request.
    """

    def __init__(self, code: grpc.StatusCode, message: str, *, attempts: int = 1,
                 chunk_offset: Optional[int] = None):
        self.code = code
        self.message = message
        self.attempts = attempts
        self.chunk_offset = chunk_offset
        super().__init__(str(self))

    def __str__(self) -> str:
        text = "%s: %s" % (self.code.name, self.message)
        if self.attempts > 1:
            text += " (after %d attempts)" % self.attempts
        if self.chunk_offset is not None:
            text += (" (in the chunk of the split request that starts at index %d: indices above "
                     "count from there)" % self.chunk_offset)
        return text

    @classmethod
    def from_rpc(cls, error: grpc.RpcError, *, attempts: int = 1) -> "RlscoreError":
        """Wraps a grpc.RpcError raised by a call (a grpc.Call: it has code() and details())."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        details = error.details() if hasattr(error, "details") else str(error)
        return cls(code, details or "", attempts=attempts)

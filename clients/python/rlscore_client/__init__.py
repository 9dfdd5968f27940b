"""rlscore_client: Python client of the rlscore reward service, with TRL and verl adapters.

    from rlscore_client import Client
    client = Client("127.0.0.1:50051")
    reply = client.score_groups([{"reference": "42", "completions": [
        "<think>6*7</think> \\\\boxed{42}", "<think>6*7</think> \\\\boxed{41}"]}])
    reply.rewards, reply.advantages      # [1.1, 0.0], [0.707..., -0.707...]

Modules: client (Client, GenerationMonitor), errors (RlscoreError), trl (RlscoreReward, a
GRPOTrainer reward function), verl (compute_score, compute_score_batch). The generated stubs
(`rlscore.v1.*_pb2`) must be importable: PYTHONPATH=build/python:clients/python.
"""

from .client import (DEFAULT_MAX_REQUEST_BYTES, DEFAULT_TARGET, UNSCORABLE_VERDICTS, Client,
                     GenerationMonitor)
from .errors import RlscoreError

__all__ = ["Client", "GenerationMonitor", "RlscoreError", "DEFAULT_TARGET",
           "DEFAULT_MAX_REQUEST_BYTES", "UNSCORABLE_VERDICTS"]

"""The gRPC client of an rlscore server (rlscore_client, shipped in the same wheel).

    from rlscore.client import Client
    reply = Client("127.0.0.1:50051").score_groups(groups)

Client.score_groups, score and compute_advantages take the same arguments as rlscore.Engine's and
answer with the same messages, so the trainer adapters (rlscore.rewards) take either.
"""

from rlscore_client import (DEFAULT_MAX_REQUEST_BYTES, DEFAULT_TARGET, UNSCORABLE_VERDICTS,
                            Client, GenerationMonitor, RlscoreError)

__all__ = ["Client", "GenerationMonitor", "RlscoreError", "DEFAULT_TARGET",
           "DEFAULT_MAX_REQUEST_BYTES", "UNSCORABLE_VERDICTS"]

#!/usr/bin/python3
"""A rollout worker that stops looping generations early with rlscore's MonitorGeneration.

It streams a (simulated) generation into MonitorGeneration as the text is produced and cancels
the generator the moment the service answers STOP: the loop is cut where rlscore's batch scorer
would later report it, instead of running on to the token ceiling.

    /usr/bin/python3 examples/rollout_worker.py --server 127.0.0.1:50051 --stubs build/python

Debian's /usr/bin/python3 has grpcio; the build generates the rlscore stubs in build/python.
To wire a real engine, replace SimulatedGeneration with the engine's streaming output and
cancel() with its abort call (README: "Stopping generations early").
"""
import argparse
import queue
import random
import sys
import threading
import time


class SimulatedGeneration:
    """Text deltas of a reasoning model that falls into the incident's reflection loop."""

    def __init__(self, seed, loop, seconds_per_delta=0.001):
        self.rng = random.Random(seed)
        # An engine takes time to produce tokens (here ~4,000 tokens/s, faster than real
        # decoding); the STOP arrives while it is still producing.
        self.seconds_per_delta = seconds_per_delta
        self.loop = loop
        self.cancelled = threading.Event()
        self.produced = 0

    def cancel(self):
        """What an engine's abort does: no more tokens are produced for this request."""
        self.cancelled.set()

    def deltas(self):
        words = ["the", "sum", "of", "digits", "is", "odd", "so", "n", "must", "be", "even",
                 "check", "case", "x", "equals", "7", "then", "prime"]
        text = "<think>We need the smallest n. "
        text += " ".join(self.rng.choice(words) for _ in range(200)) + ". "
        if self.loop:
            text += "Wait, let me double check the previous step, but wait, consider another case. " * 400
        text += "</think> \\boxed{42}"
        for at in range(0, len(text), 16):  # an engine streams a few tokens at a time
            if self.cancelled.wait(self.seconds_per_delta):
                return
            self.produced = min(at + 16, len(text))
            yield text[at:at + 16]


def monitor(stub, monitor_pb2, generation, max_tokens=16384, timeout=60):
    """Streams `generation` into MonitorGeneration; returns the STOP answer or None."""
    outbox = queue.Queue()

    def requests():
        yield monitor_pb2.MonitorGenerationRequest(
            start=monitor_pb2.GenerationStart(max_tokens=max_tokens))
        while True:
            item = outbox.get()
            if item is None:
                return
            yield item

    answers = stub.MonitorGeneration(requests(), timeout=timeout)
    stop = []

    def read():
        for answer in answers:  # at most one: the STOP
            stop.append(answer)
            generation.cancel()

    reader = threading.Thread(target=read)
    reader.start()
    for delta in generation.deltas():
        outbox.put(monitor_pb2.MonitorGenerationRequest(
            text=monitor_pb2.TextDelta(text=delta)))
    outbox.put(None)  # half-close: the generation is over
    reader.join()
    return stop[0] if stop else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--stubs", default="build/python")
    parser.add_argument("--no-loop", action="store_true", help="a generation that does not loop")
    args = parser.parse_args()
    sys.path.insert(0, args.stubs)
    import grpc
    from rlscore.v1 import monitor_pb2, scoring_service_pb2_grpc

    stub = scoring_service_pb2_grpc.ScoringServiceStub(grpc.insecure_channel(args.server))
    generation = SimulatedGeneration(seed=1432, loop=not args.no_loop)
    stop = monitor(stub, monitor_pb2, generation)
    if stop is None:
        print("finished: no STOP after %d bytes" % generation.produced)
        return
    print("STOP %s at character %d (token ~%d): %s; generation cancelled after %d bytes" % (
        monitor_pb2.StopReason.Name(stop.reason), stop.char_offset, stop.token_offset,
        stop.detail, generation.produced))


if __name__ == "__main__":
    main()

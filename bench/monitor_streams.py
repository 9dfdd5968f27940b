#!/usr/bin/python3
"""How many MonitorGeneration streams one rlscore server holds, and what each costs in memory.

    /usr/bin/python3 bench/monitor_streams.py --binary build/cli/rlscore --stubs build/python

Starts the server, then opens streams in steps (default up to 4,000), each mid-generation: a
start message and 2,000 token ids sent, the stream held open. After each step it reads the
server's resident memory (VmRSS) and checks that every open stream is still alive by sending one
more delta; at the end every stream half-closes and must end OK with no STOP. Prints a table:
streams, server RSS, RSS per stream. Results in docs/PERFORMANCE.md ("Early stop").
"""
import argparse
import asyncio
import os
import re
import subprocess
import sys
import time


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024.0


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--steps", default="0,250,500,1000,2000,4000")
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args()
    sys.path.insert(0, args.stubs)
    import grpc
    from rlscore.v1 import monitor_pb2, scoring_service_pb2_grpc

    server = subprocess.Popen([args.binary, "serve", "--listen-address=127.0.0.1:0",
                               "--metrics-address=", "--gpu=off"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = None
    for line in server.stdout:
        m = re.search(r"\(port (\d+)\)", line)
        if m:
            port = int(m.group(1))
            break
    channel = grpc.aio.insecure_channel("127.0.0.1:%d" % port)
    stub = scoring_service_pb2_grpc.ScoringServiceStub(channel)

    streams = []

    async def open_stream(k):
        call = stub.MonitorGeneration(timeout=600)
        await call.write(monitor_pb2.MonitorGenerationRequest(
            start=monitor_pb2.GenerationStart(max_tokens=16384)))
        base = k % 1000  # each stream has its own state; ids distinct within a stream
        for at in range(0, args.tokens, 100):  # distinct ids: nothing fires
            await call.write(monitor_pb2.MonitorGenerationRequest(
                tokens=monitor_pb2.TokenDelta(token_ids=range(base + at, base + at + 100))))
        streams.append(call)

    baseline = rss_mib(server.pid)
    print("%8s %14s %16s %10s" % ("streams", "server RSS MiB", "KiB per stream", "open s"))
    print("%8d %14.1f %16s %10s" % (0, baseline, "-", "-"))
    for target in [int(s) for s in args.steps.split(",") if int(s) > 0]:
        t0 = time.monotonic()
        while len(streams) < target:
            batch = min(250, target - len(streams))
            await asyncio.gather(*(open_stream(len(streams) + i) for i in range(batch)))
        opened = time.monotonic() - t0
        # Every stream still alive: one more delta each.
        await asyncio.gather(*(s.write(monitor_pb2.MonitorGenerationRequest(
            tokens=monitor_pb2.TokenDelta(token_ids=[7]))) for s in streams))
        rss = rss_mib(server.pid)
        print("%8d %14.1f %16.1f %10.1f" % (len(streams), rss,
                                           (rss - baseline) * 1024.0 / len(streams), opened))
    # All end cleanly: half-close, no STOP, status OK.
    await asyncio.gather(*(s.done_writing() for s in streams))
    codes = await asyncio.gather(*(s.code() for s in streams))
    ok = sum(1 for c in codes if c == grpc.StatusCode.OK)
    print("streams ended OK: %d of %d" % (ok, len(streams)))
    await channel.close()
    server.terminate()
    server.wait(60)
    return 0 if ok == len(streams) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

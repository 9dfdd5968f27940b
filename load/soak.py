#!/usr/bin/python3
"""Starts `rlscore serve` on free ports and drives it with rlscore-loadgen (docs/RELIABILITY.md).

    load/soak.py --binary build/rlscore --loadgen build/load/rlscore-loadgen \
        --seconds 600 --warmup 60 --max-rss-growth 0.10 [--json soak.json] [-- serve flags]

Then SIGTERM: the server must drain and exit 0 (and have logged no crash). The exit status is
loadgen's verdict (every request accounted for, the server's counters agree, RSS within bound)
combined with the server's clean exit. Any more arguments after `--` go to `rlscore serve`.
Run with Debian's Python (/usr/bin/python3): the harness uses its grpcio.
"""
import argparse
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import RunningServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rss-interval", type=int, default=5)
    ap.add_argument("--max-rss-growth", type=float, default=0.0)
    ap.add_argument("--json")
    ap.add_argument("serve", nargs="*", help="more rlscore serve flags (after --)")
    args = ap.parse_args()

    server = RunningServer(args.binary, *args.serve)
    try:
        command = [args.loadgen, "--address=" + server.address,
                   "--metrics=127.0.0.1:%d" % server.metrics_port,
                   "--seconds=%d" % args.seconds, "--warmup=%d" % args.warmup,
                   "--server-pid=%d" % server.proc.pid, "--rss-interval=%d" % args.rss_interval,
                   "--max-rss-growth=%g" % args.max_rss_growth]
        if args.json:
            command.append("--json=" + args.json)
        print("soak: " + " ".join(command), flush=True)
        load = subprocess.run(command, check=False)
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(60)
    finally:
        server.stop()
    log = server.log()
    print("soak: server exited with %d after SIGTERM; its last lines:\n%s"
          % (code, "".join(server.lines[-3:])), flush=True)
    crashed = any(word in log for word in ("AddressSanitizer", "ThreadSanitizer", "runtime error",
                                           "terminate called", "Segmentation"))
    if load.returncode != 0 or code != 0 or crashed:
        print("soak: FAIL (loadgen %d, server exit %d%s)"
              % (load.returncode, code, ", sanitizer or crash report in the log" if crashed else ""))
        if crashed:
            print(log[-8000:])
        return 1
    print("soak: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""PyTorch's vectorised GRPO advantage on the same rewards as bench/gpu_advantage_bench.cu.

    python3 bench/torch_grpo_bench.py REWARDS.f64 [GROUP_SIZE]

REWARDS.f64 holds raw little-endian doubles (the benchmark writes them with --data-dir). This is
what trainers do today (TRL, verl): reshape to (groups, G), mean and std per row, then
(r - mean) / (std + eps). It is timed on the GPU with CUDA events, the median of 20 runs after a
warm-up, in float64 (the same arithmetic as rlscore) and, for reference, float32. It prints one
line per dtype: "torch <dtype> groups <G> N <n> ms <t>".
"""
import sys

import torch


def grpo(r, group_size):
    g = r.view(-1, group_size)
    mean = g.mean(dim=1, keepdim=True)
    std = g.std(dim=1, keepdim=True)
    return ((g - mean) / (std + 1e-4)).view(-1)


def median_ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main():
    path = sys.argv[1]
    group_size = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    import os
    n = os.path.getsize(path) // 8
    n -= n % group_size
    rewards = torch.from_file(path, shared=False, size=n, dtype=torch.float64).cuda()
    for dtype in (torch.float64, torch.float32):
        r = rewards.to(dtype)
        ms = median_ms(lambda: grpo(r, group_size))
        print("torch %s groups %d N %d ms %.3f" % (str(dtype).replace("torch.", ""), group_size, n, ms))


if __name__ == "__main__":
    main()

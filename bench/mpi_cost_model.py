#!/usr/bin/python3
"""Cost model of data-parallel `ppa train` over N nodes: how many nodes finish the paper's Qwen2-0.5B epoch
(about 60,000 lists of 8 responses, 128 lists per optimizer step) in 24 hours.

A step: each node computes ceil(128 / N) lists (ppa divides a step's lists in contiguous shares, so the slowest
node has the rounded-up share), then the gradients are all-reduced. Ring all-reduce moves 2 (N - 1) / N times the
gradient bytes in and out of every node; with --zero 1 ppa adds an all-gather of the weights, (N - 1) / N times their
bytes. Time of one list: the measured full training step of the Qwen2-0.5B shapes on one node of this benchmark
machine (2 cores, bf16, K = 8, P = R = 256, forward + backward + AdamW; README, Performance). The network runs at the
stated bandwidth with no latency term (the messages are gigabytes); compute and communication do not overlap.

Usage: bench/mpi_cost_model.py [--list-seconds S] [--params P] [--lists 60000] [--per-step 128] [--hours 24]
"""
import argparse
import math


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list-seconds", type=float, default=15.69, help="one list's step on one node (measured)")
    ap.add_argument("--params", type=float, default=494e6, help="parameters (float32 gradients)")
    ap.add_argument("--lists", type=int, default=60000)
    ap.add_argument("--per-step", type=int, default=128)
    ap.add_argument("--hours", type=float, default=24.0)
    a = ap.parse_args()
    grad_bytes = 4 * a.params
    steps = math.ceil(a.lists / a.per_step)
    print("Qwen2-0.5B shapes: %.0fM parameters, %.2f GB of float32 gradients per step; %d lists, %d per step, %d steps;"
          " %.2f s per list per node" % (a.params / 1e6, grad_bytes / 1e9, a.lists, a.per_step, steps, a.list_seconds))
    print("%6s %10s | %-28s | %-28s" % ("", "", "10 Gbit/s", "100 Gbit/s"))
    print("%6s %10s | %9s %8s %9s | %9s %8s %9s" % ("nodes", "compute h", "GB/step", "comm h", "epoch h",
                                                     "GB/step", "comm h", "epoch h"))
    best = {}
    for n in (1, 2, 4, 8, 10, 11, 12, 16, 24, 32, 64, 128):
        compute = steps * math.ceil(a.per_step / n) * a.list_seconds
        row = "%6d %10.1f |" % (n, compute / 3600)
        for gbit in (10, 100):
            moved = 2 * (n - 1) / n * grad_bytes  # ring all-reduce, each node's traffic
            comm = steps * moved / (gbit * 1e9 / 8)
            total = (compute + comm) / 3600
            row += " %9.2f %8.2f %9.1f |" % (moved / 1e9, comm / 3600, total)
            if total <= a.hours and gbit not in best:
                best[gbit] = n
        print(row.rstrip(" |"))
    for gbit in (10, 100):
        print("fewest nodes for %.0f h at %d Gbit/s: %s" % (a.hours, gbit, best.get(gbit, "more than 128")))


if __name__ == "__main__":
    main()

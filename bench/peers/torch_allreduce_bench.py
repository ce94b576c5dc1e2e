#!/usr/bin/env python3
"""The peer for bench/allreduce_bench --device cpu: torch.distributed's
all_reduce (sum) with the gloo backend, --ranks processes on 127.0.0.1, the
same float32 sizes (4 KiB to 256 MiB in powers of 4), the same check (ones
summed = ranks, exactly), the same statistic (mean time per call over a
timed loop after warm-up, iterations scaled to about half a second per size)
and the same JSON fields, plus "peer".

    /usr/bin/python3 bench/peers/torch_allreduce_bench.py [--ranks N]
        [--min-bytes N] [--max-bytes N] [--factor 2|4]

One rank per invocation instead, for ranks in separate network namespaces
(bench/two_hosts.sh): --rank R --master ADDR:PORT [--ifname DEV], every rank
with the same --ranks; rank 0 listens on the master address and prints.

Debian's python3-torch (scripts/install-deps.sh --bench) provides torch; run
it with the system python3 that has it.
"""
import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, args, master):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", args.ifname)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{master}", rank=rank, world_size=args.ranks)
    n = args.ranks
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        count = nbytes // 4
        data = torch.ones(count, dtype=torch.float32)
        dist.all_reduce(data)
        if not bool(torch.all(data == float(n))):
            bad = int(torch.nonzero(data != float(n))[0])
            raise SystemExit(f"rank {rank}: all-reduce result wrong at element {bad}: {float(data[bad])}")
        data.zero_()
        warm = 5
        for _ in range(warm):
            dist.all_reduce(data)
        start = time.perf_counter()
        for _ in range(warm):
            dist.all_reduce(data)
        per_call = (time.perf_counter() - start) / warm
        iters = torch.tensor([min(20000, max(5, int(0.5 / per_call)))], dtype=torch.int64)
        dist.broadcast(iters, 0)
        iters = int(iters[0])
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(data)
        seconds = (time.perf_counter() - start) / iters
        if rank == 0:
            algbw = nbytes / seconds / 1e9
            print(json.dumps({
                "op": "allreduce", "device": "cpu", "dtype": "float32", "bytes": nbytes, "ranks": n,
                "iters": iters, "time_us": round(seconds * 1e6, 2), "algbw_gbps": round(algbw, 3),
                "busbw_gbps": round(algbw * 2 * (n - 1) / n, 3), "transport": "tcp",
                "peer": f"gloo (torch {torch.__version__})"}, separators=(",", ":")), flush=True)
        nbytes *= args.factor
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--min-bytes", type=int, default=4 << 10)
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--factor", type=int, default=4, choices=(2, 4))
    parser.add_argument("--rank", type=int, default=None)
    parser.add_argument("--master", default=None, help="ADDR:PORT of rank 0 (with --rank)")
    parser.add_argument("--ifname", default="lo", help="the interface gloo's links use")
    args = parser.parse_args()
    if args.rank is not None:
        if args.master is None or not 0 <= args.rank < args.ranks:
            parser.error("--rank needs --master and 0 <= rank < --ranks")
        rank_main(args.rank, args, args.master)
        return 0
    mp.spawn(rank_main, args=(args, f"127.0.0.1:{free_port()}"), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    sys.exit(main())

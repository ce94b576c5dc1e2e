#!/usr/bin/env python3
"""The peer for an all-reduce training job: PyTorch DistributedDataParallel
with the gloo backend on 127.0.0.1, the same LeNet, data split, batch,
optimizer and threads as

    dtrun -n 2 -s 0 -- build/examples/train_fashion_mnist --kvstore allreduce \
        --epochs 1 --batch-size 64 --threads 1

Each of --workers processes trains on its own contiguous part of
Fashion-MNIST (as MXNet's split sampler gives it), shuffled each epoch,
batch --batch-size per worker, SGD with momentum at --lr for the global
batch (DDP averages gradients, so the rate is used as given), inputs
normalised as disttrain's loader does. Rank 0 prints one JSON line:
images/s over the training epochs (all workers' samples per second of wall
time, evaluation excluded) and the test accuracy after them.

usage: torch_ddp_fashion_mnist.py [--workers N] [--epochs N] [--batch-size N]
                                  [--lr X] [--momentum X] [--threads N] [--data DIR]
Needs Debian's python3-torch (scripts/install-deps.sh --bench)."""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

from fashion_mnist_torch import lenet, load


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    torch.manual_seed(1)
    model = nn.parallel.DistributedDataParallel(lenet())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    x, y = load(args.data, "train")
    n = x.shape[0] // args.workers
    x, y = x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]
    loss_fn = nn.CrossEntropyLoss()
    samples = 0
    dist.barrier()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        g = torch.Generator()
        g.manual_seed(epoch)
        order = torch.randperm(n, generator=g)
        for i in range(0, n, args.batch_size):
            index = order[i:i + args.batch_size]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[index]), y[index])
            loss.backward()
            optimizer.step()
            samples += len(index)
    dist.barrier()
    seconds = time.perf_counter() - start
    total = torch.tensor([samples], dtype=torch.int64)
    dist.all_reduce(total)
    if rank == 0:
        tx, ty = load(args.data, "test")
        model.eval()
        with torch.no_grad():
            correct = sum(int((model.module(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum())
                          for i in range(0, tx.shape[0], 1000))
        print(json.dumps({"job": "fashion_mnist_lenet", "workers": args.workers, "batch": args.batch_size,
                          "epochs": args.epochs, "threads": args.threads,
                          "images_per_s": round(int(total) / seconds, 1), "seconds": round(seconds, 2),
                          "test_accuracy": round(correct / tx.shape[0], 4),
                          "peer": "DDP gloo (torch %s)" % torch.__version__}), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(args, port), nprocs=args.workers, join=True)


if __name__ == "__main__":
    main()

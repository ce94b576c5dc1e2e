#!/usr/bin/env python3
"""The peer for bench/nn_throughput: the same networks and training step in
PyTorch (Debian's python3-torch), same batch and thread count, one JSON line
per model. Run both in one session and compare ratios.

usage: torch_nn_throughput.py [--threads N] [--steps N] [--model lenet|resnet18|all]"""
import argparse
import json
import time

import torch
import torch.nn as nn


def lenet():
    # As disttrain's "lenet" builder: conv 20@5x5, relu, pool, conv 50@5x5,
    # relu, pool, dense 500, relu, dense 10.
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.shortcut is None else self.shortcut(x)))


def resnet18(classes=10):
    # The CIFAR variant of disttrain's "resnet18" builder (d2l's multi-machine tutorial).
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def measure(model, batch, shape, warmup, steps):
    x = torch.rand(batch, *shape) - 0.5
    y = torch.arange(batch) % 10
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return batch * steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--model", default="all")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    if args.model in ("all", "lenet"):
        ips = measure(lenet(), 64, (1, 28, 28), 3, args.steps or 100)
        print(json.dumps({"model": "lenet", "batch": 64, "threads": args.threads,
                          "images_per_s": round(ips, 1), "peer": "torch " + torch.__version__}))
    if args.model in ("all", "resnet18"):
        ips = measure(resnet18(), 32, (3, 32, 32), 2, args.steps or 10)
        print(json.dumps({"model": "resnet18", "batch": 32, "threads": args.threads,
                          "images_per_s": round(ips, 1), "peer": "torch " + torch.__version__}))


if __name__ == "__main__":
    main()

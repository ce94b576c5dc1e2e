#!/usr/bin/env python3
"""The peer for bench/nn_throughput: the same networks and training step in
PyTorch (Debian's python3-torch), same batch and thread count, one JSON line
per model. Run both in one session and compare ratios.

usage: torch_nn_throughput.py [--device cpu|gpu] [--precision fp32|fp16|bf16]
                              [--threads N] [--steps N] [--warmup N] [--batch N]
                              [--model lenet|resnet18|all]

--device gpu trains on cuda:0 with the batch already there, as
nn_throughput --device gpu does. --precision fp16 / bf16 is PyTorch's
automatic mixed precision, the counterpart of nn_throughput --precision:
torch.autocast over the forward and the loss (float32 master weights), and
for fp16 a torch.cuda.amp.GradScaler (dynamic loss scaling, skipped steps on
overflow); bf16 needs no scaler. float32 runs keep TF32 off, as disttrain's
float32 kernels do."""
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


AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(model, batch, shape, warmup, steps, device, precision):
    model = model.to(device)
    x = (torch.rand(batch, *shape) - 0.5).to(device)
    y = (torch.arange(batch) % 10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    autocast_dtype = AUTOCAST_DTYPES.get(precision)
    scaler = torch.cuda.amp.GradScaler() if precision == "fp16" else None
    model.train()
    for i in range(warmup + steps):
        if i == warmup:
            synchronize(device)
            start = time.perf_counter()
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    synchronize(device)
    return batch * steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=-1,
                        help="warm-up steps; default as nn_throughput: 10 on the GPU, LeNet 3 and ResNet-18 2 on the CPU")
    parser.add_argument("--model", default="all")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    parser.add_argument("--batch", type=int, default=0,
                        help="both models' batch; default as nn_throughput: LeNet 64, ResNet-18 32 (CPU) or 128 (GPU)")
    args = parser.parse_args()
    if args.precision != "fp32" and args.device != "gpu":
        parser.error("--precision %s is mixed precision, measured on the GPU: add --device gpu" % args.precision)
    if args.device == "gpu" and not torch.cuda.is_available():
        parser.exit(1, "torch_nn_throughput: --device gpu needs CUDA, and torch sees none\n")
    device = torch.device("cuda:0" if args.device == "gpu" else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    def report(model, batch, ips):
        print(json.dumps({"model": model, "device": args.device, "precision": args.precision, "batch": batch,
                          "threads": args.threads, "images_per_s": round(ips, 1),
                          "peer": "torch " + torch.__version__}))

    # The same batches, warm-up and step counts as nn_throughput.
    gpu = args.device == "gpu"

    def warmup(default):
        return default if args.warmup < 0 else args.warmup

    if args.model in ("all", "lenet"):
        batch = args.batch or 64
        report("lenet", batch, measure(lenet(), batch, (1, 28, 28), warmup(10 if gpu else 3),
                                       args.steps or (500 if gpu else 100), device, args.precision))
    if args.model in ("all", "resnet18"):
        batch = args.batch or (128 if gpu else 32)
        report("resnet18", batch, measure(resnet18(), batch, (3, 32, 32), warmup(10 if gpu else 2),
                                          args.steps or (100 if gpu else 10), device, args.precision))


if __name__ == "__main__":
    main()

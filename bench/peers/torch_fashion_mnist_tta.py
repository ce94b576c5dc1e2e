#!/usr/bin/env python3
"""PyTorch's side of bench/time_to_accuracy.sh: the recipe of

    build/examples/train_fashion_mnist --model MODEL --epochs N --batch-size 64 \
        --lr 0.02 --momentum 0.9 --gpus 0 --metrics FILE

on one device, so that the seconds each needs to a fixed test accuracy can
be set side by side. The same as disttrain's, by construction:
  - the models: LeNet as src/nn/model_builders.cc builds "lenet" (Conv 20@5x5,
    ReLU, MaxPool 2/2, Conv 50@5x5, ReLU, MaxPool 2/2, Dense 500, ReLU,
    Dense 10), and its "resnet18" (3x3 stride-1 64-channel stem without bias,
    BatchNorm, ReLU, no max pool; four stages of two basic blocks, 64-512
    channels, stride 2 and a 1x1 conv + BatchNorm shortcut at the start of
    stages 2-4; global average pooling, Dense 10) with a one-channel stem;
  - initialisation: Xavier-uniform weights and zero biases for convolutions
    and Dense layers (disttrain's defaults), BatchNorm gamma 1, beta 0,
    momentum 0.1 in PyTorch's terms (Gluon's 0.9), epsilon 1e-5;
  - data: Debian's Fashion-MNIST IDX files, normalised with disttrain's
    loader defaults (mean 0.2860, std 0.3530), reshuffled every epoch, the
    last partial batch kept; held on the host and copied to the device
    batch by batch, as disttrain's loader does;
  - SGD with momentum at a constant rate, no weight decay, the mean
    cross-entropy of the batch.
The initial weights and the shuffling order are drawn differently.

Prints one JSON line per epoch: {"epoch", "seconds" (training only,
evaluation excluded, as disttrain's metrics log counts an epoch),
"test_accuracy"}; then one summary line with "seconds_to_target" (the
training seconds summed up to the first epoch whose test accuracy reached
--target; null when none did), "final_test_accuracy", "train_seconds" and
"wall_seconds" (from the start of the script).

usage: torch_fashion_mnist_tta.py [--model lenet|resnet18] [--epochs N]
    [--batch-size N] [--lr X] [--momentum X] [--target X] [--device cuda|cpu]
    [--threads N] [--data DIR]"""
import time

WALL_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fashion_mnist_torch import lenet, load  # noqa: E402


def conv_bn(cin, cout, kernel, stride):
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)]


class BasicBlock(nn.Module):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), as basic_block."""

    def __init__(self, cin, cout, stride, project):
        super().__init__()
        self.main = nn.Sequential(*conv_bn(cin, cout, 3, stride), nn.ReLU(), *conv_bn(cout, cout, 3, 1))
        self.shortcut = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if project else nn.Identity()

    def forward(self, x):
        return torch.relu(self.main(x) + self.shortcut(x))


def resnet18(channels=1, classes=10):
    layers = conv_bn(channels, 64, 3, 1) + [nn.ReLU()]
    cin = 64
    for stage, width in enumerate((64, 128, 256, 512)):
        for block in range(2):
            downsample = stage > 0 and block == 0
            layers.append(BasicBlock(cin, width, 2 if downsample else 1, downsample))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def initialise(model):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def evaluate(model, x, y, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], 1000):
            logits = model(x[i:i + 1000].to(device, non_blocking=True))
            correct += int((logits.argmax(1).cpu() == y[i:i + 1000]).sum())
    model.train()
    return correct / x.shape[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("lenet", "resnet18"), default="lenet")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--target", type=float, default=0.88)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    model = lenet() if args.model == "lenet" else resnet18()
    initialise(model)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()
    x, y = load(args.data, "train")
    tx, ty = load(args.data, "test")
    if device.type == "cuda":
        x, y = x.pin_memory(), y.pin_memory()
    n = x.shape[0]
    train_seconds, seconds_to_target, accuracy = 0.0, None, 0.0
    for epoch in range(args.epochs):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch))
        synchronize(device)
        start = time.perf_counter()
        for i in range(0, n, args.batch_size):
            index = order[i:i + args.batch_size]
            xb = x[index].to(device, non_blocking=True)
            yb = y[index].to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
        synchronize(device)
        seconds = time.perf_counter() - start
        train_seconds += seconds
        accuracy = evaluate(model, tx, ty, device)
        if seconds_to_target is None and accuracy >= args.target:
            seconds_to_target = train_seconds
        print(json.dumps({"epoch": epoch + 1, "seconds": round(seconds, 3), "test_accuracy": round(accuracy, 4),
                          "loss": round(float(loss), 4)}), flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(json.dumps({"impl": "pytorch", "model": args.model, "epochs": args.epochs, "batch": args.batch_size,
                      "lr": args.lr, "momentum": args.momentum, "target": args.target,
                      "seconds_to_target": None if seconds_to_target is None else round(seconds_to_target, 2),
                      "final_test_accuracy": round(accuracy, 4), "train_seconds": round(train_seconds, 2),
                      "wall_seconds": round(time.perf_counter() - WALL_START, 2),
                      "device": name, "peer": "torch %s" % torch.__version__}), flush=True)


if __name__ == "__main__":
    main()

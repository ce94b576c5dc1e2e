#!/usr/bin/env python3
"""How far PyTorch's own mixed-precision gradients sit from its float32 ones:
the peer figure for tests/gpu/gpu_mixed_precision_test.cc's net tolerances.

One forward and backward of the same net, from the same weights and batch,
in float32 (TF32 off) and under torch.autocast (float16 with a fixed loss
scale of 1024, taken out after backward, as the test's LossScaler does;
bfloat16 without one). Prints one JSON line per net and dtype: the relative
Euclidean error ||g_low - g_f32|| / ||g_f32|| of each parameter's gradient
(max and median over parameters), and of the logits.

usage: torch_grad_error.py [--batch N] [--seed N]
Nets as disttrain's builders: "lenet" (1x28x28, batch 16) and the d2l
ResNet-18 "resnet18" (3x32x32, 3x3 stem, no max-pool, batch 8)."""
import argparse
import json
import statistics

import torch
import torch.nn as nn


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (self.proj(x) if self.proj is not None else x))


def resnet18():
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for stage, width in enumerate([64, 128, 256, 512]):
        for block in range(2):
            layers.append(Block(cin, width, 2 if stage > 0 and block == 0 else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def run(net, x, y, dtype):
    net.zero_grad(set_to_none=True)
    scale = 1024.0 if dtype == torch.float16 else 1.0
    with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
        logits = net(x)
        loss = nn.functional.cross_entropy(logits.float(), y)
    (loss * scale).backward()
    grads = [p.grad.detach().float() / scale for p in net.parameters()]
    return logits.detach().float(), grads


def rel(a, b):
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=0, help="batch size (default: lenet 16, resnet18 8)")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, make, shape, batch in (("lenet", lenet, (1, 28, 28), 16), ("resnet18", resnet18, (3, 32, 32), 8)):
        batch = args.batch or batch
        torch.manual_seed(args.seed)
        net = make().cuda().train()
        state = {k: v.clone() for k, v in net.state_dict().items()}
        x = torch.randn((batch,) + shape, device="cuda")
        y = torch.arange(batch, device="cuda") % 10
        ref_logits, ref = run(net, x, y, torch.float32)
        for label, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            net.load_state_dict(state)  # the same running statistics as the float32 pass
            logits, grads = run(net, x, y, dtype)
            errors = [rel(g, r) for g, r in zip(grads, ref)]
            print(json.dumps({"net": name, "precision": label, "batch": batch, "logits_rel_l2": round(rel(logits, ref_logits), 5),
                              "grad_rel_l2_max": round(max(errors), 5),
                              "grad_rel_l2_median": round(statistics.median(errors), 5),
                              "peer": "torch " + torch.__version__}), flush=True)


if __name__ == "__main__":
    main()

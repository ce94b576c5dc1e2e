#!/usr/bin/env python3
"""The peer for bench/nn_throughput: the same networks and training step in
PyTorch (Debian's python3-torch), same batch and thread count, one JSON line
per model. Run both in one session and compare ratios.

usage: torch_nn_throughput.py [--device cpu|gpu] [--precision fp32|fp16|bf16]
                              [--threads N] [--steps N] [--warmup N] [--batch N]
                              [--model lenet|resnet18|all] [--tuned]
                              [--channels-last] [--compile MODE] [--repeat N]
                              [--ddp N [--rank R --master ADDR:PORT [--ifname DEV]]]

--device gpu trains on cuda:0 with the batch already there, as
nn_throughput --device gpu does. --precision fp16 / bf16 is PyTorch's
automatic mixed precision, the counterpart of nn_throughput --precision:
torch.autocast over the forward and the loss (float32 master weights), and
for fp16 a torch.cuda.amp.GradScaler (dynamic loss scaling, skipped steps on
overflow); bf16 needs no scaler. float32 runs keep TF32 off, as disttrain's
float32 kernels do.

PyTorch as its users tune it, the comparison issue 38 asks for:
  --tuned          torch.backends.cudnn.benchmark = True (cuDNN times its
                   algorithms on the first step of each shape and keeps the
                   fastest), and with --precision fp16/bf16 on the GPU the
                   channels_last memory format (model and batch), which
                   lets cuDNN use its NHWC tensor-core kernels.
  --channels-last  channels_last alone (also for fp32).
  --compile MODE   torch.compile(model, mode=MODE): default, reduce-overhead
                   (CUDA graphs; small nets such as LeNet, whose steps are
                   launch-bound), max-autotune, max-autotune-no-cudagraphs.
                   Needs PyTorch 2; compile time is spent in the warm-up.
  --repeat N       N timed windows of --steps after one warm-up, one JSON
                   line each ("window"), so one compile serves N figures.
  --ddp N          N processes on the one device, DistributedDataParallel
                   over gloo (NCCL refuses two ranks on one GPU), each with
                   its own batch; rank 0 prints its images/s, as rank 0 of
                   nn_throughput --kvstore does under dtrun.
  --rank R --master ADDR:PORT [--ifname DEV]
                   with --ddp N: this process is rank R of the N, placed by
                   the caller on any host (bench/two_hosts.sh's step part);
                   rank 0 listens on ADDR:PORT, gloo's links use DEV
                   (GLOO_SOCKET_IFNAME, default lo), and every rank prints
                   its own line with its "rank".
Each line says how it was tuned ("cudnn_benchmark", "channels_last",
"compile", "ddp_workers") and, on the GPU, the peak of
torch.cuda.max_memory_allocated over the run ("peak_bytes", counted from
before the model is moved to the device) and torch.cuda.memory_reserved at
its end ("reserved_bytes"): nn_throughput's peak_bytes and cached_bytes."""
import argparse
import json
import os
import socket
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


def make_scaler(precision):
    if precision != "fp16":
        return None
    # torch.amp.GradScaler("cuda") replaces the deprecated torch.cuda.amp one.
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def measure(model, batch, shape, warmup, steps, device, precision, tuning, repeat=1, ddp_group=None):
    """images/s of each of `repeat` timed windows, and the peak bytes (GPU)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    memory_format = torch.channels_last if tuning["channels_last"] else torch.contiguous_format
    model = model.to(device, memory_format=memory_format)
    if ddp_group is not None:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None, process_group=ddp_group)
    if tuning["compile"] != "none":
        model = torch.compile(model, mode=None if tuning["compile"] == "default" else tuning["compile"])
    x = (torch.rand(batch, *shape) - 0.5).to(device).contiguous(memory_format=memory_format)
    y = (torch.arange(batch) % 10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    autocast_dtype = AUTOCAST_DTYPES.get(precision)
    scaler = make_scaler(precision)
    # CUDA graphs (reduce-overhead) reuse their output memory: each step
    # must say that the previous step's outputs are no longer read.
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if tuning["compile"] != "reduce-overhead":
        mark_step = None
    model.train()

    def step():
        if mark_step is not None:
            mark_step()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    for _ in range(warmup):
        step()
    rates = []
    for _ in range(repeat):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        rates.append(batch * steps / (time.perf_counter() - start))
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    reserved = torch.cuda.memory_reserved(device) if device.type == "cuda" else None
    return rates, peak, reserved


def tuning_of(args):
    sixteen_bits = args.precision != "fp32" and args.device == "gpu"
    return {"cudnn_benchmark": args.tuned,
            "channels_last": args.channels_last or (args.tuned and sixteen_bits),
            "compile": args.compile}


def parse_args():
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
    parser.add_argument("--tuned", action="store_true",
                        help="cudnn.benchmark, and channels_last for fp16/bf16 on the GPU")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--compile", default="none",
                        choices=("none", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ddp", type=int, default=0, help="processes on the one device (DDP over gloo)")
    parser.add_argument("--rank", type=int, default=None, help="with --ddp N: run rank R alone (any host)")
    parser.add_argument("--master", default=None, help="ADDR:PORT of rank 0 (with --rank)")
    parser.add_argument("--ifname", default="lo", help="the interface gloo's links use (with --rank)")
    args = parser.parse_args()
    if args.rank is not None and (args.master is None or not 0 <= args.rank < args.ddp):
        parser.error("--rank needs --ddp N, --master and 0 <= rank < N")
    if args.precision != "fp32" and args.device != "gpu":
        parser.error("--precision %s is mixed precision, measured on the GPU: add --device gpu" % args.precision)
    if args.repeat < 1 or args.ddp < 0:
        parser.error("--repeat must be at least 1 and --ddp at least 0")
    if args.compile != "none" and not hasattr(torch, "compile"):
        parser.exit(1, "torch_nn_throughput: --compile needs PyTorch 2 (this is %s)\n" % torch.__version__)
    if args.device == "gpu" and not torch.cuda.is_available():
        parser.exit(1, "torch_nn_throughput: --device gpu needs CUDA, and torch sees none\n")
    return args


def run(args, rank=0, ddp_group=None, every_rank=False):
    device = torch.device("cuda:0" if args.device == "gpu" else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = args.tuned
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    tuning = tuning_of(args)

    def report(model, batch, result):
        rates, peak, reserved = result
        if rank != 0 and not every_rank:
            return
        for window, ips in enumerate(rates):
            line = {"model": model, "device": args.device, "precision": args.precision, "batch": batch,
                    "threads": args.threads, "images_per_s": round(ips, 3), "peak_bytes": peak,
                    "reserved_bytes": reserved, "peer": "torch " + torch.__version__}
            line.update(tuning)
            if args.ddp:
                line["ddp_workers"] = args.ddp
            if every_rank:
                line["rank"] = rank
            if args.repeat > 1:
                line["window"] = window
            print(json.dumps(line), flush=True)

    # The same batches, warm-up and step counts as nn_throughput.
    gpu = args.device == "gpu"

    def warmup(default):
        return default if args.warmup < 0 else args.warmup

    if args.model in ("all", "lenet"):
        batch = args.batch or 64
        report("lenet", batch, measure(lenet(), batch, (1, 28, 28), warmup(10 if gpu else 3),
                                       args.steps or (500 if gpu else 100), device, args.precision, tuning,
                                       args.repeat, ddp_group))
    if args.model in ("all", "resnet18"):
        batch = args.batch or (128 if gpu else 32)
        report("resnet18", batch, measure(resnet18(), batch, (3, 32, 32), warmup(10 if gpu else 2),
                                          args.steps or (100 if gpu else 10), device, args.precision, tuning,
                                          args.repeat, ddp_group))


def ddp_worker(rank, args, port, master=None):
    import datetime
    import torch.distributed as dist
    # Every wait bounded: a rank that never comes fails the others in minutes.
    dist.init_process_group("gloo", init_method="tcp://" + (master or "127.0.0.1:%d" % port), rank=rank,
                            world_size=args.ddp, timeout=datetime.timedelta(seconds=300))
    try:
        run(args, rank, dist.group.WORLD, every_rank=master is not None)
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = parse_args()
    if args.ddp == 0:
        run(args)
        return
    if args.rank is not None:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", args.ifname)
        ddp_worker(args.rank, args, 0, args.master)
        return
    import torch.multiprocessing as mp
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    mp.spawn(ddp_worker, args=(args, free_port()), nprocs=args.ddp, join=True)


if __name__ == "__main__":
    main()

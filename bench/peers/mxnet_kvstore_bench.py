#!/usr/bin/env python3
"""The peer for bench/kvstore_bench: MXNet's dist_sync kvstore (ps-lite over
ZeroMQ) on the same loopback, same sizes, same statistic (the median of the
per-repetition times, mean beside it), one JSON line per measurement with
"peer":"ps-lite". Run it in the same session as kvstore_bench and compare
ratios: these machines drift +-25% between runs.

MXNet is not a Debian package; PyPI's wheel works on bookworm:
  python3 -m venv /tmp/mxvenv
  /tmp/mxvenv/bin/pip install mxnet==1.9.1 'numpy<1.24'
  /tmp/mxvenv/bin/python bench/peers/mxnet_kvstore_bench.py [--max-bytes N] [--layouts 1x1,2x2]

Like kvstore_bench it starts every process itself (scheduler, servers and
workers, as MXNet's tools/launch.py --launcher local does) and kills what
is left after a deadline. ps-lite has no ipc transport: tcp only."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def repetitions(nbytes):
    # As kvstore_bench.
    return 500 if nbytes <= 64 << 10 else 50 if nbytes <= 1 << 20 else 10 if nbytes <= 16 << 20 else 4


def report(op, nbytes, servers, workers, seconds, what=None):
    median = statistics.median(seconds)
    both_ways = op == "pushpull"
    extra = {"set": what} if what else {}
    print(json.dumps({"op": op, "peer": "ps-lite", "bytes": nbytes, "servers": servers, "workers": workers,
                      "transport": "tcp", **extra, "gbps": round((2 if both_ways else 1) * nbytes / median / 1e9, 3),
                      "latency_us": round(median * 1e6, 1),
                      "mean_us": round(statistics.mean(seconds) * 1e6, 1), "reps": len(seconds)}), flush=True)


def resnet18_shapes():
    # Gluon's ResNet-18 (v1, 10 classes): its 62 trainable tensors, 11.2 M
    # floats, as kvstore_bench's set (the first convolution is 7x7 here,
    # 3x3 there: 0.1% of the bytes).
    import mxnet as mx
    net = mx.gluon.model_zoo.vision.resnet18_v1(classes=10)
    net.initialize()
    net(mx.nd.zeros((1, 3, 32, 32)))
    return [p.shape for p in net.collect_params().values() if p.grad_req != "null"]


def measure(kv, keys, grads, outs, nbytes, servers, what=None):
    import mxnet as mx
    single = len(keys) == 1
    k, g, o = (keys[0], grads[0], outs[0]) if single else (keys, grads, outs)

    def wait():
        for out in outs:
            out.wait_to_read()

    for op in ("push", "pull", "pushpull"):
        # One untimed round, then per-repetition times; every call is waited
        # for (MXNet's engine is asynchronous).
        kv.pushpull(k, g, out=o)
        wait()
        kv._barrier()
        seconds = []
        for _ in range(repetitions(nbytes)):
            start = time.perf_counter()
            if op == "push":
                kv.push(k, g)
                mx.nd.waitall()
            elif op == "pull":
                kv.pull(k, out=o)
                wait()
            else:
                kv.pushpull(k, g, out=o)
                wait()
            seconds.append(time.perf_counter() - start)
        if op == "push":
            kv.pull(k, out=o)
            wait()
        if kv.rank == 0:
            report(op, nbytes, servers, kv.num_workers, seconds, what)


def worker(max_bytes):
    import mxnet as mx
    kv = mx.kv.create("dist_sync")
    servers = int(os.environ["DMLC_NUM_SERVER"])
    key = 0
    for nbytes in SIZES:
        if nbytes > max_bytes:
            continue
        grad = mx.nd.zeros((nbytes // 4,))
        out = mx.nd.zeros((nbytes // 4,))
        kv.init(key, grad)
        measure(kv, [key], [grad], [out], nbytes, servers)
        key += 1
    if max_bytes >= SIZES[-1]:
        shapes = resnet18_shapes()
        keys = list(range(key, key + len(shapes)))
        grads = [mx.nd.zeros(s) for s in shapes]
        outs = [mx.nd.zeros(s) for s in shapes]
        kv.init(keys, grads)
        measure(kv, keys, grads, outs, sum(g.size for g in grads) * 4, servers, "resnet18")
    kv._barrier()


def node():
    # Scheduler or server: importing mxnet with DMLC_ROLE set runs the node
    # and exits when the job ends.
    import mxnet  # noqa: F401


def run_job(servers, workers, max_bytes, port):
    env = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(port),
               DMLC_NUM_SERVER=str(servers), DMLC_NUM_WORKER=str(workers), OMP_NUM_THREADS="1",
               MXNET_CPU_WORKER_NTHREADS="1")
    me = os.path.abspath(__file__)
    procs = [subprocess.Popen([sys.executable, me, "--node"], env=dict(env, DMLC_ROLE="scheduler"))]
    procs += [subprocess.Popen([sys.executable, me, "--node"], env=dict(env, DMLC_ROLE="server"))
              for _ in range(servers)]
    procs += [subprocess.Popen([sys.executable, me, "--worker", str(max_bytes)], env=dict(env, DMLC_ROLE="worker"))
              for _ in range(workers)]
    deadline = time.time() + 600
    ok = True
    for p in procs:
        try:
            ok = p.wait(timeout=max(1, deadline - time.time())) == 0 and ok
        except subprocess.TimeoutExpired:
            ok = False
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    return ok


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--node":
        return node()
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        return worker(int(sys.argv[2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-bytes", type=int, default=SIZES[-1])
    parser.add_argument("--layouts", default="1x1,2x2", help="servers x workers, comma separated")
    parser.add_argument("--port", type=int, default=29731, help="the scheduler's port (+1 per layout)")
    args = parser.parse_args()
    ok = True
    for i, layout in enumerate(args.layouts.split(",")):
        servers, workers = (int(x) for x in layout.split("x"))
        ok = run_job(servers, workers, args.max_bytes, args.port + i) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""torch.distributed all-reduce (NCCL backend) over every visible GPU, one process per
GPU (torch.multiprocessing spawn), for the comparison with bench/allreduce.lua: the
same sizes, dtype and timing method (batches of back-to-back in-place all_reduce calls
between CUDA events on each rank's current stream, the slowest rank per batch, the
median batch).  One line per size, printed by rank 0:
    ALLREDUCE_TORCH size=<bytes> dtype=<name> world=<n> torch_us=<us> torch_busbw=<GB/s>
busbw = bytes * 2 (n - 1) / n / time (nccl-tests' definition).
    python3 bench/nccl_torch.py [bytes ...]        env DTYPE=float32|bfloat16 (float32)"""
import os
import sys

import time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DEFAULT_SIZES = [4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576, 4194304, 16777216, 67108864,
                 268435456]
REPS = 7


def iters_for(nbytes):
    if nbytes <= 1048576:
        return 200
    if nbytes <= 16777216:
        return 50
    return 10


def time_us(fn, iters, world):
    # warm-up: batches of 8 calls until every rank has warmed for 100 ms (as
    # allreduce_peer.time_us; the ranks agree through a MIN all-reduce, so each
    # makes the same number of collective calls)
    t0 = time.perf_counter()
    flag = torch.zeros(1, device="cuda")
    while True:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()
        flag.fill_(1.0 if time.perf_counter() - t0 >= 0.1 else 0.0)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if flag.item() == 1.0:
            break
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPS):
        e0.record()
        for _ in range(iters):
            fn()
        e1.record()
        e1.synchronize()
        t = torch.tensor([e0.elapsed_time(e1) * 1e3 / iters], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank (outside the timed batch)
        times.append(t.item())
    times.sort()
    return times[(REPS + 1) // 2 - 1]


def nccl_version():
    v = torch.cuda.nccl.version()  # a tuple (2, 28, 9), or an int in older releases
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def worker(rank, world, sizes, dtype_name, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    try:  # device_id (torch >= 2.3) binds the communicator to this GPU at once
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    except TypeError:
        dist.init_process_group("nccl", rank=rank, world_size=world)
    dtype = getattr(torch, dtype_name)
    esize = torch.empty((), dtype=dtype).element_size()
    if rank == 0:
        print("bench/nccl_torch.py: %d x %s, torch %s, NCCL %s, dtype %s" % (
            world, torch.cuda.get_device_name(0), torch.__version__,
            nccl_version(), dtype_name), flush=True)
    for nbytes in sizes:
        x = torch.ones(nbytes // esize, dtype=dtype, device="cuda")
        us = time_us(lambda: dist.all_reduce(x), iters_for(nbytes), world)
        if rank == 0:
            print("ALLREDUCE_TORCH size=%d dtype=%s world=%d torch_us=%.2f torch_busbw=%.1f" % (
                nbytes, dtype_name, world, us, nbytes * 2 * (world - 1) / world / us / 1e3), flush=True)
        del x
    dist.barrier()
    dist.destroy_process_group()


def main():
    sizes = [int(a) for a in sys.argv[1:]] or DEFAULT_SIZES
    dtype_name = os.environ.get("DTYPE", "float32")
    if dtype_name not in ("float32", "bfloat16"):
        raise SystemExit("bench/nccl_torch.py: DTYPE must be float32 or bfloat16, got %r" % dtype_name)
    world = torch.cuda.device_count()
    if world < 2:
        print("bench/nccl_torch.py: needs 2 or more GPUs; nothing measured")
        return
    port = 29500 + os.getpid() % 1000
    mp.spawn(worker, args=(world, sizes, dtype_name, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()

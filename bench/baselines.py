"""Baselines for bench/kernels.lua, measured with PyTorch on the same GPU in the
same run.  Prints one JSON object: GB/s for add / sum / softmax and device copy,
TFLOP/s for fp32 matmul (cuBLAS, TF32 off): the median over >= 50 CUDA-event
samples (key), and the rates of the slowest and fastest samples (key_min,
key_max).  Same method as bench/timing.lua (docs/BENCHMARKS.md, "Method")."""
import json, sys
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def med_ms(fn, reps=50, min_ms=500.0, warm_ms=200.0, spread=None):
    """Median ms of fn, timed as bench/timing.lua times ours: one first call,
    warm-up of warm_ms of GPU time, then >= reps samples and >= min_ms of timed
    work, each sample after a read of a scratch buffer twice the L2 size (no
    sample finds its data in L2).  spread: a list that gets (min, max)."""
    import time
    fn()
    torch.cuda.synchronize()
    busy = 0.0
    while busy < warm_ms:
        t0 = time.perf_counter()
        for _ in range(4):
            fn()
        torch.cuda.synchronize()
        busy += (time.perf_counter() - t0) * 1e3
    ts, total = [], 0.0
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(ts) < reps or total < min_ms:
        _flush.sum()
        a.record(); fn(); b.record(); b.synchronize()
        t = a.elapsed_time(b)
        ts.append(t)
        total += t
    ts.sort()
    n = len(ts)
    if spread is not None:
        spread[:] = [ts[0], ts[-1]]
    return ts[n // 2] if n % 2 else (ts[n // 2 - 1] + ts[n // 2]) / 2


_l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2 ** 20)
_flush = torch.zeros(max(2 * _l2, 64 * 2 ** 20) // 4, device="cuda")


def rate(key, work, fn, **kw):
    """out[key] = work / median ms, with key_min / key_max from the spread"""
    sp = []
    ms = med_ms(fn, spread=sp, **kw)
    out[key] = work / ms
    out[key + "_min"], out[key + "_max"] = work / sp[1], work / sp[0]


def main():
    global out
    out = {}
    n = 2 ** 28
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    z = torch.empty_like(x)
    rate("add_gbps", 12 * n / 1e6, lambda: torch.add(x, y, out=z))
    rate("sum_gbps", 4 * n / 1e6, lambda: torch.sum(x))
    rate("copy_gbps", 8 * n / 1e6, lambda: z.copy_(x))
    del x, y, z
    R, N = 16384, 4096
    a = torch.randn(R, N, device="cuda")
    o = torch.empty_like(a)
    rate("softmax_gbps", 8 * R * N / 1e6, lambda: torch.softmax(a, dim=1))
    del a, o
    S = 4096
    A, B = torch.randn(S, S, device="cuda"), torch.randn(S, S, device="cuda")
    C = torch.empty(S, S, device="cuda")
    rate("sgemm_tflops", 2 * S ** 3 / 1e9, lambda: torch.mm(A, B, out=C), reps=20)
    out["device"] = torch.cuda.get_device_name(0)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

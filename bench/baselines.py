"""Baselines for bench/kernels.lua, measured with PyTorch on the same GPU in the
same run.  Prints one JSON object: GB/s for add / sum / softmax and device copy,
TFLOP/s for fp32 matmul (cuBLAS, TF32 off).  Median of CUDA-event timings."""
import json, sys
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def med_ms(fn, reps=20, warm=3):
    # warm up for at least 100 ms of GPU work too (clocks ramp up), as
    # examples/common.lua does for our kernels
    import time
    t0, i = time.perf_counter(), 0
    while i < warm or time.perf_counter() - t0 < 0.1:
        fn()
        i += 1
        if i % 4 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


out = {}
n = 2 ** 28
x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
z = torch.empty_like(x)
out["add_gbps"] = 12 * n / med_ms(lambda: torch.add(x, y, out=z)) / 1e6
out["sum_gbps"] = 4 * n / med_ms(lambda: torch.sum(x)) / 1e6
out["copy_gbps"] = 8 * n / med_ms(lambda: z.copy_(x)) / 1e6
del x, y, z
R, N = 16384, 4096
a = torch.randn(R, N, device="cuda")
o = torch.empty_like(a)
out["softmax_gbps"] = 8 * R * N / med_ms(lambda: torch.softmax(a, dim=1)) / 1e6
del a, o
S = 4096
A, B = torch.randn(S, S, device="cuda"), torch.randn(S, S, device="cuda")
C = torch.empty(S, S, device="cuda")
out["sgemm_tflops"] = 2 * S ** 3 / med_ms(lambda: torch.mm(A, B, out=C), reps=10) / 1e9
out["device"] = torch.cuda.get_device_name(0)
print(json.dumps(out))

"""Tensor-core baselines for bench/gemm_tc.lua, measured on the same GPU in the
same run: cuBLAS through torch.matmul (bf16, tf32, int8 via torch._int_mm), a
Triton matmul with the tile shape of our bf16 GEMM (128 x 128 x 64, 4 stages,
4 warps), Triton's autotuned matmul (8 configs, grouped order: its first call, autotuning
included, and its best config), fp8 e4m3 through torch._scaled_mm (bf16 out, per-tensor
scales), and SDPA's flash backend.  Prints one JSON object of TFLOP/s (TOP/s for
int8), each the median of CUDA-event samples timed as bench/baselines.py times
(it imports its med_ms).  Sizes: argv[1:] (default 4096 8192)."""
import json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from baselines import med_ms  # noqa: E402  (also measures add/sum/... on import: cheap)

out = {"device": torch.cuda.get_device_name(0)}
sizes = [int(s) for s in sys.argv[1:]] or [4096, 8192]


def tflops(key, flop, fn, **kw):
    try:
        out[key] = flop / med_ms(fn, **kw) / 1e9
    except Exception as e:  # a missing backend is reported, not fatal
        out[key + "_error"] = str(e)[:200]


for n in sizes:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * n ** 3
    # C = A * B^T with both K-major, as our kernel computes it
    tflops(f"bf16_{n}", flop, lambda: torch.matmul(a, b.t()))
    af, bf = a.float(), b.float()
    torch.backends.cuda.matmul.allow_tf32 = True
    tflops(f"tf32_{n}", flop, lambda: torch.matmul(af, bf.t()))
    torch.backends.cuda.matmul.allow_tf32 = False
    ai = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
    bi = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
    tflops(f"int8_{n}", flop, lambda: torch._int_mm(ai, bi.t()))
    # fp8 e4m3: A (M x K) row-major times B (N x K) row-major, i.e. B^T column-major
    try:
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        tflops(f"fp8_{n}", flop, lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                                          out_dtype=torch.bfloat16))
        # cuBLAS's fast accumulation (no promotion of the fp8 wgmma's partial sums to
        # f32): the accuracy our fp8 example has, so the like-for-like baseline
        tflops(f"fp8_fast_{n}", flop, lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                                               out_dtype=torch.bfloat16, use_fast_accum=True))
        del a8, b8
    except Exception as e:
        out[f"fp8_{n}_error"] = str(e)[:200]
    del a, b, af, bf, ai, bi
    torch.cuda.empty_cache()

try:
    import triton
    import triton.language as tl

    @triton.jit
    def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(1)
        pid_n = tl.program_id(0)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
            b = tl.load(b_ptr + rn[None, :] * K + (k0 + rk)[:, None])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        grid = (n // 128, n // 128)
        run = lambda: mm_kernel[grid](a, b, c, n, n, n, BM=128, BN=128, BK=64, num_stages=4, num_warps=4)
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        out[f"triton_first_call_ms_{n}"] = (time.perf_counter() - t0) * 1e3
        err = (c.float() - (a.float() @ b.float().t())).abs().max().item()
        out[f"triton_maxerr_{n}"] = err
        tflops(f"triton_bf16_{n}", 2.0 * n ** 3, run)
except Exception as e:
    out["triton_error"] = str(e)[:300]

# Triton's autotuned matmul (C = A B^T, bf16): 8 configs, grouped launch order
try:
    import triton
    import triton.language as tl

    def cfg(bm, bn, bk, s, w):
        return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)

    @triton.autotune(configs=[cfg(128, 256, 64, 3, 8), cfg(256, 128, 64, 3, 8), cfg(128, 128, 64, 4, 4),
                              cfg(128, 128, 64, 5, 8), cfg(128, 256, 64, 4, 8), cfg(64, 256, 64, 4, 4),
                              cfg(256, 64, 64, 4, 4), cfg(128, 64, 64, 4, 4)], key=["M", "N", "K"])
    @triton.jit
    def mm_auto(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUP: tl.constexpr):
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP * npn
        first_m = (pid // per_group) * GROUP
        gsize = min(npm - first_m, GROUP)
        pid_m = first_m + (pid % per_group) % gsize
        pid_n = (pid % per_group) // gsize
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
            b = tl.load(b_ptr + rn[None, :] * K + (k0 + rk)[:, None])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        grid = lambda META: (triton.cdiv(n, META["BM"]) * triton.cdiv(n, META["BN"]),)
        run = lambda: mm_auto[grid](a, b, c, n, n, n)
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        out[f"triton_auto_first_call_ms_{n}"] = (time.perf_counter() - t0) * 1e3
        out[f"triton_auto_maxerr_{n}"] = (c.float() - (a.float() @ b.float().t())).abs().max().item()
        tflops(f"triton_auto_bf16_{n}", 2.0 * n ** 3, run)
except Exception as e:
    out["triton_auto_error"] = str(e)[:300]

print(json.dumps(out, indent=1))

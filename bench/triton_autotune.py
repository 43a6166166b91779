# bench/triton_autotune.py: the Triton baseline of issue 13's sweep figure --
# Triton's @triton.autotune over an 8-config bf16 matmul space, the wall time
# of the first call (it compiles every config one after another, then times
# each), with Triton's disk cache empty, in a fresh process.
#   python3 bench/triton_autotune.py [N]
# Prints the first call's wall time, a second call's (configs chosen, kernel
# cached), the chosen config and its TFLOP/s at N x N x N; machine-readable
# lines start with "TRITON_AUTOTUNE ".  bench/autotune_sweep.lua is ours.
import os
import sys
import tempfile
import time

# an empty cache directory of its own, set before triton is imported
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-autotune-")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8192

# 8 configs: tile M/N/K, stages, warps (the space of Triton's matmul tutorial)
CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64}, num_stages=3, num_warps=8),
    triton.Config({"BM": 64, "BN": 256, "BK": 32}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 32, "BK": 32}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 32, "BK": 32}, num_stages=5, num_warps=2),
    triton.Config({"BM": 32, "BN": 64, "BK": 32}, num_stages=5, num_warps=2),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul(a, b, c, M, N, K, sam, sak, sbn, sbk, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C = A * B^T: A M x K, B N x K (both K-major, as our gemm_bf16), C M x N
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=rm[:, None] < M, other=0.0)
        y = tl.load(b + rn[None, :] * sbn + (k + rk)[:, None] * sbk, mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(x, y)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16), mask=m)


def call(A, B, C):
    grid = lambda meta: (triton.cdiv(N, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
    matmul[grid](A, B, C, N, N, N, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1))


def main():
    torch.manual_seed(0)
    A = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    C = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t = time.perf_counter()
    call(A, B, C)
    torch.cuda.synchronize()
    first = time.perf_counter() - t
    t = time.perf_counter()
    call(A, B, C)
    torch.cuda.synchronize()
    second = time.perf_counter() - t
    ref = (A.float() @ B.float().t()).to(torch.bfloat16)
    err = (C.float() - ref.float()).abs().max().item()
    # the chosen config's time (events, median of 20 after a warm-up)
    ms = triton.testing.do_bench(lambda: call(A, B, C), warmup=100, rep=500, return_mode="median")
    best = matmul.best_config
    print("triton %s, torch %s, %s" % (triton.__version__, torch.__version__, torch.cuda.get_device_name()))
    print("Triton @autotune, %d configs, %d^3 bf16: first call %.2f s (compiles and times every config), "
          "second call %.2f ms" % (len(CONFIGS), N, first, second * 1e3))
    print("best: %s: %.4f ms, %.1f TFLOP/s (max |error| vs torch %.3g)" % (best, ms, 2 * N ** 3 / ms / 1e9, err))
    print("TRITON_AUTOTUNE first_call_s=%.3f second_call_ms=%.3f best_ms=%.4f best_tflops=%.2f configs=%d"
          % (first, second * 1e3, ms, 2 * N ** 3 / ms / 1e9, len(CONFIGS)))


if __name__ == "__main__":
    main()

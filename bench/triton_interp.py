# Triton's interpreter (TRITON_INTERPRET=1) on the two kernels issue 14 names, as the baseline of
# the CPU target's figures (bench/cpu_vs_triton.sh runs both on one core in the same run):
#   vector add 2^20 fp32 (BLOCK 1024) and a 64x64-tile matmul 256^3 (BLOCK_K 32), fp32.
# (K is a constexpr: the interpreter of Triton 3.6 cannot loop over range(0, K, BK) with a tensor K.)
# Prints one line per kernel: "triton_interp <name> median_s=<s> best_s=<s> reps=<n>".
import os, sys, time, statistics
os.environ["TRITON_INTERPRET"] = "1"
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(v, "1")
import torch
import triton
import triton.language as tl

torch.set_num_threads(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5


@triton.jit
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def matmul(a, b, c, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ta = tl.load(a + rm[:, None] * K + (k0 + rk)[None, :])
        tb = tl.load(b + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(ta, tb, allow_tf32=False)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


def timed(fn):
    fn()  # warm-up (the interpreter has no compile step, this warms caches)
    ts = []
    t_end = time.perf_counter() + 0.1
    while len(ts) < reps or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts), len(ts)


n = 1 << 20
x, y = torch.rand(n), torch.rand(n)
z = torch.empty(n)
med, best, k = timed(lambda: vadd[(n // 1024,)](x, y, z, n, BLOCK=1024))
assert torch.equal(z, x + y), "vector add: wrong result"
print(f"triton_interp vector_add_2^20 median_s={med:.4f} best_s={best:.4f} reps={k}")

m = 256
A, B = torch.rand(m, m) - 0.5, torch.rand(m, m) - 0.5
Cm = torch.empty(m, m)
med, best, k = timed(lambda: matmul[(m // 64, m // 64)](A, B, Cm, m, m, m, BM=64, BN=64, BK=32))
err = (Cm - A @ B).abs().max().item()
assert err < 1e-3, f"matmul: max error {err}"
print(f"triton_interp matmul_256^3 median_s={med:.4f} best_s={best:.4f} reps={k}")

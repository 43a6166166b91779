# bench/triton_cache.py: Triton's first call in a cold process, with its disk
# cache missing and hitting -- the baseline of issue 12's cold-hit figure
# (bench/cache.lua measures ours the same way).
#   python3 bench/triton_cache.py [runs]
# Each measurement is a new Python process over one fresh TRITON_CACHE_DIR:
# the first process misses (compiles and stores), the later ones hit.  The
# child times from just before the kernel's first call to the end of a
# torch.cuda.synchronize() after it (the CUDA context and torch are set up
# before the clock starts, as bench/cache.lua does for ours).  Printed: one
# line per kernel with the miss and the median hit, in ms.
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time, torch, triton, triton.language as tl

@triton.jit
def vadd(a, b, c, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(c + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)

@triton.jit
def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
        y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16))

which = sys.argv[1]
dev = torch.device("cuda")
if which == "vadd":
    n = 1 << 20
    a, b, c = (torch.zeros(n, device=dev) for _ in range(3))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    vadd[(n // 1024,)](a, b, c, n, BLOCK=1024)
else:
    M = N = K = 1024
    a = torch.zeros(M, K, device=dev, dtype=torch.bfloat16)
    b = torch.zeros(K, N, device=dev, dtype=torch.bfloat16)
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    matmul[(M // 128, N // 128)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                 c.stride(0), c.stride(1), BM=128, BN=128, BK=64, num_warps=8, num_stages=4)
torch.cuda.synchronize()
print((time.perf_counter() - t0) * 1e3)
"""


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    out = {}
    for which in ("vadd", "matmul"):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TRITON_CACHE_DIR=d + "/cache")
            child = os.path.join(d, "child.py")  # @triton.jit wants its source in a file
            with open(child, "w") as f:
                f.write(CHILD)
            ms = []
            for _ in range(runs + 1):
                r = subprocess.run([sys.executable, child, which], env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"triton_cache.py: the {which} child failed:\n{r.stderr}")
                ms.append(float(r.stdout.strip().splitlines()[-1]))
        out[which] = {"miss_ms": ms[0], "hit_ms": statistics.median(ms[1:]), "hits": ms[1:]}
        print(f"triton {which}: first call in a cold process, cache miss {ms[0]:.1f} ms, "
              f"hit {statistics.median(ms[1:]):.2f} ms (median of {runs})")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

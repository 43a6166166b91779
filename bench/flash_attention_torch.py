"""PyTorch baseline for bench/flash_attention.lua and bench/flash_attention_sm90.lua:
scaled_dot_product_attention with one backend at a time, bf16 (B, H, S, D), causal
and not.  Prints one JSON object: <prefix>_<causal|full>_tflops (median, with
_min / _max) per backend and configuration, timed as bench/baselines.py times
(bench/timing.lua's method).  Backends (a comma-separated list, default "flash"):
flash (keys fa_*), cudnn (keys cudnn_*; skipped with cudnn_error when this
PyTorch or GPU has no cuDNN attention).
    python3 bench/flash_attention_torch.py [B] [H] [S] [D] [flash,cudnn]"""
import json, os, sys
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
B, H, S, D = (int(x) for x in (sys.argv[1:5] + ["4", "16", "4096", "128"][len(sys.argv[1:5]):]))
BACKENDS = (sys.argv[5] if len(sys.argv) > 5 else "flash").split(",")


def main():
    # med_ms (and its L2 flush) from baselines.py without running its measurements
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines.py")).read()
    head = src.split("\nout = {}")[0]
    ns = {}
    exec(compile(head, "baselines.py", "exec"), ns)
    med_ms = ns["med_ms"]
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = {"device": torch.cuda.get_device_name(0)}
    B_ = torch.nn.attention.SDPBackend
    known = {"flash": ("fa", B_.FLASH_ATTENTION), "cudnn": ("cudnn", getattr(B_, "CUDNN_ATTENTION", None))}
    for name in BACKENDS:
        if name not in known:
            raise SystemExit("flash_attention_torch.py: unknown backend %r (flash, cudnn)" % name)
        prefix, backend = known[name]
        if backend is None:
            out[prefix + "_error"] = "this PyTorch has no SDPBackend.CUDNN_ATTENTION"
            continue
        try:
            for causal in (False, True):
                flops = 4 * B * H * S * S * D / (2 if causal else 1)
                key = "%s_%s_tflops" % (prefix, "causal" if causal else "full")
                with torch.nn.attention.sdpa_kernel(backend):
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    sp = []
                    ms = med_ms(fn, spread=sp)
                out[key] = flops / ms / 1e9
                out[key + "_min"], out[key + "_max"] = flops / sp[1] / 1e9, flops / sp[0] / 1e9
        except RuntimeError as e:  # no kernel of this backend for these inputs / this GPU
            out[prefix + "_error"] = str(e).splitlines()[0][:200]
    print(json.dumps(out))


main()

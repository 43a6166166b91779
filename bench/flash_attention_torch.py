"""PyTorch baseline for bench/flash_attention.lua: scaled_dot_product_attention
with the flash backend only, bf16 (B, H, S, D), causal and not.  Prints one JSON
object: fa_<causal|full>_tflops (median, with _min / _max) per configuration,
timed as bench/baselines.py times (bench/timing.lua's method).
    python3 bench/flash_attention_torch.py [B] [H] [S] [D]"""
import json, os, sys
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
B, H, S, D = (int(x) for x in (sys.argv[1:5] + ["4", "16", "4096", "128"][len(sys.argv[1:5]):]))


def main():
    # med_ms (and its L2 flush) from baselines.py without running its measurements
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines.py")).read()
    head = src.split("\nout = {}")[0]
    ns = {}
    exec(compile(head, "baselines.py", "exec"), ns)
    med_ms = ns["med_ms"]
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = {"device": torch.cuda.get_device_name(0)}
    backend = torch.nn.attention.SDPBackend.FLASH_ATTENTION
    for causal in (False, True):
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        key = "fa_%s_tflops" % ("causal" if causal else "full")
        with torch.nn.attention.sdpa_kernel(backend):
            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            sp = []
            ms = med_ms(fn, spread=sp)
        out[key] = flops / ms / 1e9
        out[key + "_min"], out[key + "_max"] = flops / sp[1] / 1e9, flops / sp[0] / 1e9
    print(json.dumps(out))


main()

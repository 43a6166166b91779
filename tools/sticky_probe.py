# Can a process go on after a sticky CUDA error (700)?  Probes the driver API's
# reset sequences, one process per variant (docs/FAULTS.md records the answer):
#   python3 tools/sticky_probe.py [variant]     variants: reset, release_reset, ctx_create, none
import ctypes as C, sys, subprocess
PTX = b""".version 7.0
.target sm_80
.address_size 64
.visible .entry bad() {
  .reg .b64 %rd<2>;
  mov.u64 %rd1, 8;
  st.global.u32 [%rd1], 1;
  ret;
}
.visible .entry good(.param .u64 p) {
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1], 42;
  ret;
}
"""
def run(variant):
    cu = C.CDLL("libcuda.so.1")
    P = C.c_void_p
    def ok(name, *a):
        r = getattr(cu, name)(*a)
        return r
    ok("cuInit", 0)
    dev = C.c_int(); ok("cuDeviceGet", C.byref(dev), 0)
    ctx = P()
    if variant == "ctx_create":
        r = ok("cuCtxCreate_v2", C.byref(ctx), 0, dev)
    else:
        r = ok("cuDevicePrimaryCtxRetain", C.byref(ctx), dev)
    ok("cuCtxSetCurrent", ctx)
    mod = P(); fn = P()
    ok("cuModuleLoadData", C.byref(mod), PTX); ok("cuModuleGetFunction", C.byref(fn), mod, b"bad")
    ok("cuLaunchKernel", fn, 1, 1, 1, 1, 1, 1, 0, None, None, None)
    r = ok("cuCtxSynchronize")
    print(variant, "fault sync:", r)
    steps = []
    if variant == "reset":
        steps.append(("cuDevicePrimaryCtxReset_v2", ok("cuDevicePrimaryCtxReset_v2", dev)))
        ctx = P(); steps.append(("retain", ok("cuDevicePrimaryCtxRetain", C.byref(ctx), dev)))
    elif variant == "release_reset":
        steps.append(("setcur NULL", ok("cuCtxSetCurrent", None)))
        steps.append(("release", ok("cuDevicePrimaryCtxRelease_v2", dev)))
        steps.append(("reset", ok("cuDevicePrimaryCtxReset_v2", dev)))
        ctx = P(); steps.append(("retain", ok("cuDevicePrimaryCtxRetain", C.byref(ctx), dev)))
    elif variant == "ctx_create":
        steps.append(("destroy", ok("cuCtxDestroy_v2", ctx)))
        ctx = P(); steps.append(("create", ok("cuCtxCreate_v2", C.byref(ctx), 0, dev)))
    steps.append(("setcur", ok("cuCtxSetCurrent", ctx)))
    d = C.c_uint64(); steps.append(("malloc", ok("cuMemAlloc_v2", C.byref(d), 4)))
    mod = P(); fn = P()
    steps.append(("load", ok("cuModuleLoadData", C.byref(mod), PTX)))
    steps.append(("getfn", ok("cuModuleGetFunction", C.byref(fn), mod, b"good")))
    arg = C.c_uint64(d.value); argp = (P * 1)(C.cast(C.byref(arg), P))
    steps.append(("launch", ok("cuLaunchKernel", fn, 1, 1, 1, 1, 1, 1, 0, None, argp, None)))
    steps.append(("sync", ok("cuCtxSynchronize")))
    h = C.c_uint32(0); steps.append(("dtoh", ok("cuMemcpyDtoH_v2", C.byref(h), d, 4)))
    print(variant, steps, "value", h.value, "RECOVERED" if h.value == 42 else "NOT RECOVERED")
if len(sys.argv) > 1:
    run(sys.argv[1])
else:
    for v in ("reset", "release_reset", "ctx_create"):
        subprocess.run([sys.executable, __file__, v])

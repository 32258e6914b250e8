# Headroom's readiness probe: run by each Python interpreter doctor finds. Prints one line,
# "HEADROOM-PROBE " + JSON, whatever fails; every failure is a fact, not a crash.
import json, os, platform, sys

out = {
    "executable": sys.executable,
    "version": platform.python_version(),
    "implementation": platform.python_implementation(),
    "machine": platform.machine(),
    "platform": sys.platform,
    "prefix": sys.prefix,
    "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    "torch": None,
    "torch_error": None,
    "mlx": None,
    "mlx_error": None,
}

def short(e):
    return (type(e).__name__ + ": " + str(e)).strip().splitlines()[0][:300]

try:
    import torch
    t = {
        "version": torch.__version__,
        "cuda_version": getattr(torch.version, "cuda", None),
        "mps_built": bool(torch.backends.mps.is_built()),
        "mps_available": bool(torch.backends.mps.is_available()),
        "cuda_available": bool(torch.cuda.is_available()),
        "cuda_devices": [],
        "matmul_device": None,
        "matmul_error": None,
    }
    if t["cuda_available"]:
        t["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    want = "mps" if t["mps_available"] else ("cuda" if t["cuda_available"] else "cpu")
    try:
        a = torch.ones(64, 64, device=want)
        c = a @ a
        ok = float(c[0, 0].item()) == 64.0
        t["matmul_device"] = str(c.device)
        if not ok:
            t["matmul_error"] = "the matmul on %s returned a wrong value" % want
    except Exception as e:
        t["matmul_device"] = None
        t["matmul_error"] = "on %s: %s" % (want, short(e))
    out["torch"] = t
except Exception as e:
    out["torch_error"] = short(e)

try:
    import mlx.core as mx
    import importlib.metadata as md
    try:
        version = md.version("mlx")
    except Exception:
        version = getattr(mx, "__version__", None)
    out["mlx"] = {"version": version, "default_device": str(mx.default_device())}
except Exception as e:
    out["mlx_error"] = short(e)

sys.stdout.write("HEADROOM-PROBE " + json.dumps(out) + "\n")
sys.stdout.flush()

"""Collects the libtorch libraries the `headroom-worker` binary needs, for a bundle.

Linux: follows the ELF NEEDED entries of the binary through the libraries of the venv's torch
(torch/lib and the nvidia/* packages beside it), copies every one it reaches into LIBDIR (flat,
under its soname), and writes LIBDIR/../LIBRARIES listing them with their sizes. Libraries of the
system (glibc, libstdc++, libgcc_s) stay the system's. The `cuda` flavour also carries what
libtorch_cuda opens at run time with dlopen (cuDNN's engine libraries, NVRTC and its builtins),
which no NEEDED entry names. patchelf then gives the copies an rpath of `$ORIGIN` (run by
bundle.sh), so they find each other and nothing outside the bundle.

    python3 scripts/bundle_libs.py BINARY TORCH_LIB LIBDIR [--flavour cpu|cuda]
"""

import argparse
import os
import shutil
import subprocess
import sys


def needed(path: str) -> list[str]:
    out = subprocess.run(["readelf", "-dW", path], check=True, capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        if "(NEEDED)" in line and "[" in line:
            names.append(line.split("[", 1)[1].rstrip("]").strip())
    return names


def search_dirs(torch_lib: str) -> list[str]:
    site = os.path.dirname(os.path.dirname(torch_lib))  # site-packages
    dirs = [torch_lib]
    nvidia = os.path.join(site, "nvidia")
    if os.path.isdir(nvidia):
        for root, subdirs, _files in os.walk(nvidia):
            if os.path.basename(root) == "lib":
                dirs.append(root)
                subdirs[:] = []
    return dirs


def resolve(name: str, dirs: list[str]) -> str | None:
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("torch_lib")
    ap.add_argument("libdir")
    ap.add_argument("--flavour", choices=["cpu", "cuda"], default="cpu")
    a = ap.parse_args()
    dirs = search_dirs(os.path.realpath(a.torch_lib))
    found: dict[str, str] = {}
    todo = [a.binary]
    while todo:
        for name in needed(todo.pop()):
            if name in found:
                continue
            p = resolve(name, dirs)
            if p is None:
                continue  # the system's
            found[name] = p
            todo.append(p)
    if a.flavour == "cpu" and "libtorch_cuda.so" in found:
        print("bundle_libs: the binary still needs libtorch_cuda.so; remove it first (patchelf --remove-needed)", file=sys.stderr)
        return 1
    if a.flavour == "cuda":
        # Opened with dlopen by libtorch_cuda / cuDNN / NVRTC: every library in the folders of
        # cuDNN and NVRTC the closure already reached.
        for d in dirs:
            if any(os.path.dirname(p) == d for p in found.values()) and ("cudnn" in d or "cu13" in d):
                for f in sorted(os.listdir(d)):
                    if (".so" in f) and (f.startswith("libcudnn") or f.startswith("libnvrtc")) and f not in found:
                        found[f] = os.path.join(d, f)
    os.makedirs(a.libdir, exist_ok=True)
    rows = []
    for name, src in sorted(found.items()):
        dst = os.path.join(a.libdir, name)
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o644)
        rows.append((os.path.getsize(dst), name, os.path.relpath(src, os.path.dirname(os.path.dirname(a.torch_lib)))))
    total = sum(r[0] for r in rows)
    with open(os.path.join(os.path.dirname(os.path.normpath(a.libdir)), "LIBRARIES"), "w") as f:
        f.write(f"Libraries carried beside headroom-worker ({a.flavour} flavour), from the PyPI torch wheel:\n")
        for size, name, src in sorted(rows, reverse=True):
            f.write(f"{size / 2**20:9.1f} MiB  {name}  (site-packages/{src})\n")
        f.write(f"{total / 2**20:9.1f} MiB  in all\n")
    for size, name, _ in sorted(rows, reverse=True):
        print(f"bundle_libs: {size / 2**20:8.1f} MiB  {name}")
    print(f"bundle_libs: {len(rows)} libraries, {total / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

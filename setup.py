"""Build torch_inplace's Python extension (torch_inplace._C) with torch.utils.cpp_extension.

CPU sources are always built. CUDA sources (csrc/**/*.cu) are added when the installed torch has CUDA and
nvcc's major version matches torch.version.cuda; a ROCm torch gets the same sources, hipified by CUDAExtension.

Environment:
  TORCH_INPLACE_CPU_ONLY=1     build the CPU sources only, even where CUDA is available
  TORCH_INPLACE_FORCE_CUDA=1   build the CUDA sources even without a visible GPU (CI compiles them)
  TORCH_CUDA_ARCH_LIST="9.0"   the CUDA architectures (torch's own variable; default here: 9.0)
  MAX_JOBS=N                   parallel compile jobs (torch's own variable)
  TORCH_INPLACE_DEBUG=1        -O0 -g
"""
import glob
import os
import re
import subprocess

from setuptools import find_packages, setup

import torch
from torch.utils.cpp_extension import CUDA_HOME, ROCM_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.0"


def _env_flag(name):
    return os.environ.get(name, "0").lower() in ("1", "true", "yes", "on")


def _nvcc_major():
    if CUDA_HOME is None:
        return None
    try:
        out = subprocess.check_output([os.path.join(CUDA_HOME, "bin", "nvcc"), "--version"], text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"release (\d+)\.", out)
    return int(m.group(1)) if m else None


def _gpu_backend():
    """'cuda', 'rocm' or None, with the reason printed so build logs say why."""
    if _env_flag("TORCH_INPLACE_CPU_ONLY"):
        print("torch_inplace: TORCH_INPLACE_CPU_ONLY set: CPU-only build")
        return None
    if torch.version.hip is not None and ROCM_HOME is not None:
        print(f"torch_inplace: ROCm torch (HIP {torch.version.hip}): building the GPU sources for HIP")
        return "rocm"
    if torch.version.cuda is None:
        print("torch_inplace: torch has no CUDA: CPU-only build")
        return None
    nvcc = _nvcc_major()
    torch_major = int(torch.version.cuda.split(".")[0])
    if nvcc != torch_major:
        print(f"torch_inplace: nvcc major {nvcc} != torch CUDA {torch.version.cuda}: CPU-only build")
        return None
    if not torch.cuda.is_available() and not _env_flag("TORCH_INPLACE_FORCE_CUDA") and not os.environ.get(
        "TORCH_CUDA_ARCH_LIST"
    ):
        # Without a GPU torch cannot guess the arch list; we default to Hopper below, so build anyway.
        print("torch_inplace: no GPU visible; building CUDA sources for TORCH_CUDA_ARCH_LIST (default 9.0)")
    return "cuda"


def extensions():
    backend = _gpu_backend()
    sources = sorted(glob.glob("csrc/**/*.cpp", recursive=True))
    sources = [s for s in sources if not s.startswith(os.path.join("csrc", "tests"))]
    debug = _env_flag("TORCH_INPLACE_DEBUG")
    opt = ["-O0", "-g"] if debug else ["-O3"]
    cxx = opt + ["-std=c++17", "-fdiagnostics-color=always", "-DTORCH_INPLACE_PYTHON_MODULE"]
    kwargs = dict(include_dirs=[os.path.join(ROOT, "csrc")])
    if backend is None:
        return [CppExtension("torch_inplace._C", sources, extra_compile_args={"cxx": cxx}, **kwargs)]
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    sources += sorted(glob.glob("csrc/**/*.cu", recursive=True))
    nvcc = opt + ["-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "-DTORCH_INPLACE_WITH_CUDA"]
    if backend == "rocm":
        nvcc = opt + ["-std=c++17", "-DTORCH_INPLACE_WITH_CUDA"]
    cxx = cxx + ["-DTORCH_INPLACE_WITH_CUDA"]
    return [CUDAExtension("torch_inplace._C", sources, extra_compile_args={"cxx": cxx, "nvcc": nvcc}, **kwargs)]


# The compiled library links against this torch's C++ ABI, which changes between minor versions: the package
# requires the minor version it was built with.
_TORCH_MAJOR, _TORCH_MINOR = (int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    LONG_DESCRIPTION = f.read()

setup(
    name="torch_inplace",
    version=VERSION,
    description="In-place transposition and small batched LU/inverse as PyTorch operators (CPU, CUDA, HIP)",
    long_description=LONG_DESCRIPTION,
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    classifiers=[
        "License :: OSI Approved :: BSD License",
        "Programming Language :: C++",
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Mathematics",
    ],
    packages=find_packages(include=["torch_inplace", "torch_inplace.*"]),
    package_data={"torch_inplace": ["py.typed"]},
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.10",
    install_requires=[f"torch>={_TORCH_MAJOR}.{_TORCH_MINOR},<{_TORCH_MAJOR}.{_TORCH_MINOR + 1}"],
    zip_safe=False,
)

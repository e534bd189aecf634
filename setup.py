"""Build torch_inplace's Python extension (torch_inplace._C) with torch.utils.cpp_extension.

CPU sources are always built. CUDA sources (csrc/**/*.cu) are added when the installed torch has CUDA and
nvcc's major version matches torch.version.cuda; a ROCm torch gets the same sources, hipified by CUDAExtension.

The extension is built against the torch installed in the environment, so install with
`pip install --no-build-isolation .`: an isolated build would fetch another torch (the newest on PyPI) to build
against, and the package would then require that one. Only an sdist (`python -m build --sdist
--no-isolation`, or `python setup.py sdist`) is made without torch.

Environment:
  TORCH_INPLACE_CPU_ONLY=1     build the CPU sources only, even where CUDA is available
  TORCH_INPLACE_FORCE_CUDA=1   build the CUDA sources even without a visible GPU (CI compiles them)
  TORCH_CUDA_ARCH_LIST="9.0"   the CUDA architectures (torch's own variable; default: the visible GPUs' own, or
                               9.0 where none is visible)
  MAX_JOBS=N                   parallel compile jobs (torch's own variable)
  TORCH_INPLACE_DEBUG=1        -O0 -g (otherwise -O3 without debug information)
"""
import glob
import os
import re
import subprocess
import sys

from setuptools import find_packages, setup

ROOT = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.0"
# Commands that need no compiler and no torch: an sdist carries the sources, not a build.
_METADATA_ONLY = {"sdist", "egg_info", "dist_info", "--version", "--name", "check"}

try:
    import torch
    from torch.utils.cpp_extension import CUDA_HOME, ROCM_HOME, BuildExtension, CppExtension, CUDAExtension
except ImportError:
    torch = None
    if not _METADATA_ONLY.intersection(sys.argv[1:]):
        sys.exit("torch_inplace: building the extension needs PyTorch installed in this environment (the build "
                 "links against it). Install torch first, then build with pip's build isolation off: "
                 "pip install --no-build-isolation .")


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
    debug = _env_flag("TORCH_INPLACE_DEBUG")
    nvcc_opt = ["-O0", "-g"] if debug else ["-O3"]
    opt = nvcc_opt if debug else nvcc_opt + ["-g0"]  # -g0: Python's CFLAGS carry -g (a 28 MB library otherwise)
    # Hidden visibility, as the CMake library's (csrc/torch_inplace.h, TORCH_INPLACE_API): the module exports PyInit__C
    # and the public C++ API, none of the internals.
    hidden = [] if sys.platform == "win32" else ["-fvisibility=hidden", "-fvisibility-inlines-hidden"]
    cxx = opt + ["-std=c++17", "-fdiagnostics-color=always", "-DTORCH_INPLACE_PYTHON_MODULE",
                 "-DTORCH_INPLACE_BUILD_LIBRARY"] + hidden
    kwargs = dict(include_dirs=[os.path.join(ROOT, "csrc")])
    # OpenMP, as ATen itself: ATen/Parallel.h runs at::parallel_for on torch's OpenMP threads only in code compiled
    # with OpenMP (INTRA_OP_PARALLEL); elsewhere every parallel_for runs its whole range on the calling thread. The
    # library links libgomp.so.1, the SONAME that torch loads first (its own copy), so both share one thread pool and
    # torch.set_num_threads governs ours. (Apple's clang has no -fopenmp: serial there.)
    if sys.platform == "win32":
        cxx.append("/openmp")
    elif sys.platform != "darwin":
        cxx.append("-fopenmp")
        kwargs["extra_link_args"] = ["-fopenmp"]
    if backend is None:
        return [CppExtension("torch_inplace._C", sources, extra_compile_args={"cxx": cxx}, **kwargs)]
    if backend == "cuda" and not torch.cuda.is_available():
        # Without a GPU torch cannot tell the architecture: Hopper, the GPUs the kernels are tuned on. Where a GPU is
        # visible, torch builds for it (as for any extension).
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    sources += sorted(glob.glob("csrc/**/*.cu", recursive=True))
    nvcc = nvcc_opt + ["-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "-DTORCH_INPLACE_WITH_CUDA",
                       "-DTORCH_INPLACE_BUILD_LIBRARY"] + [f"-Xcompiler={f}" for f in hidden]
    if backend == "rocm":
        nvcc = nvcc_opt + ["-std=c++17", "-DTORCH_INPLACE_WITH_CUDA", "-DTORCH_INPLACE_BUILD_LIBRARY"] + hidden
    cxx = cxx + ["-DTORCH_INPLACE_WITH_CUDA"]
    return [CUDAExtension("torch_inplace._C", sources, extra_compile_args={"cxx": cxx, "nvcc": nvcc}, **kwargs)]


# The compiled library links against this torch's C++ ABI, which changes between minor versions: the package
# requires the minor version it was built with (an sdist made without torch says only "torch").
if torch is not None:
    _TORCH_MAJOR, _TORCH_MINOR = (int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
    _REQUIRES = [f"torch>={_TORCH_MAJOR}.{_TORCH_MINOR},<{_TORCH_MAJOR}.{_TORCH_MINOR + 1}"]
else:
    _REQUIRES = ["torch"]
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
        "Programming Language :: C++",
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Mathematics",
    ],
    packages=find_packages(include=["torch_inplace", "torch_inplace.*"]),
    package_data={"torch_inplace": ["py.typed"]},
    ext_modules=extensions() if torch is not None else [],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)} if torch is not None else {},
    python_requires=">=3.10",
    install_requires=_REQUIRES,
    zip_safe=False,
)

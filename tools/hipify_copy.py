"""Hipifies a copy of csrc/ the way a ROCm build of the extension does, for tools/hip_check.sh.

    python tools/hipify_copy.py DEST

copies csrc/ to DEST/csrc and runs torch's hipify there with the arguments that
torch.utils.cpp_extension.CUDAExtension passes on a ROCm PyTorch (setup.py's sources as extra_files, csrc/ as the
header include directory), then prints one line per hipified file: "<path in csrc/> <hipified path under DEST>".
Needs only torch's pure-Python hipify module, which a CUDA or CPU build of PyTorch ships too.
"""
import contextlib
import glob
import os
import shutil
import sys

from torch.utils.hipify import hipify_python


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dest = os.path.abspath(sys.argv[1])
    shutil.rmtree(os.path.join(dest, "csrc"), ignore_errors=True)
    shutil.copytree(os.path.join(root, "csrc"), os.path.join(dest, "csrc"))
    os.chdir(dest)
    # setup.py's GPU sources (csrc/**/*.cpp and *.cu); the headers they include are hipified through them.
    sources = sorted(glob.glob("csrc/**/*.cpp", recursive=True)) + sorted(glob.glob("csrc/**/*.cu", recursive=True))
    sources = [s for s in sources if not s.startswith(os.path.join("csrc", "tests"))]
    with contextlib.redirect_stdout(sys.stderr):  # hipify's own messages; stdout carries the file list
        result = hipify_python.hipify(
            project_directory=dest,
            output_directory=dest,
            header_include_dirs=[os.path.join(dest, "csrc")],
            includes=[os.path.join(dest, "*")],
            extra_files=[os.path.abspath(s) for s in sources],
            show_detailed=False,
            show_progress=False,
            is_pytorch_extension=True,
            hipify_extra_files_only=True,
        )
    for src, res in sorted(result.items()):
        if res.hipified_path and os.path.abspath(res.hipified_path) != os.path.abspath(src):
            print(os.path.relpath(src, dest), os.path.relpath(res.hipified_path, dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())

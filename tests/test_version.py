"""One version everywhere: the C++ header (which CMake's project(VERSION) reads), the Python package and setup.py.
Reads the files only, so it needs no build."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def test_versions_agree():
    header = _read("csrc/torch_inplace.h")
    parts = [re.search(rf"^#define TORCH_INPLACE_VERSION_{p} +(\d+) *$", header, re.M).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    cpp = ".".join(parts)
    assert re.search(r'^#define TORCH_INPLACE_VERSION +"([^"]+)"', header, re.M).group(1) == cpp
    py = re.search(r'^__version__ = "([^"]+)"', _read("torch_inplace/__init__.py"), re.M).group(1)
    setup = re.search(r'^VERSION = "([^"]+)"', _read("setup.py"), re.M).group(1)
    assert cpp == py == setup, f"header {cpp}, torch_inplace/__init__.py {py}, setup.py {setup}"

"""Scripts a TorchScript module that calls torch_inplace's ops and saves it, with its example inputs and the
outputs it must produce, for the C++ example (examples/cpp/main.cpp) to load, run and compare.

    python examples/cpp/make_module.py --out inplace_module.pt                # ops from `import torch_inplace`
    python examples/cpp/make_module.py --library build/libtorch_inplace.so --out inplace_module.pt

The saved module has attributes `names` (List[str]), `inputs` (List[Tensor]) and `expected` (List[Tensor]);
`forward(inputs)` returns one output per name.
"""
import argparse
import sys
from typing import List

import torch


class InplaceModule(torch.nn.Module):
    def __init__(self, names: List[str], inputs: List[torch.Tensor]):
        super().__init__()
        self.names = names
        self.inputs = inputs
        self.expected: List[torch.Tensor] = []

    def forward(self, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
        x = inputs[0].clone()
        torch.ops.inplace.transpose_(x)  # in place: (4, 6) -> (6, 4) in the same storage
        y = inputs[1].clone()
        torch.ops.inplace.aos_to_soa_(y)
        inv = torch.ops.inplace.batched_inverse(inputs[2])
        return [x, y, inv]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where to save the scripted module (.pt)")
    ap.add_argument("--library", help="load the ops from this shared library instead of `import torch_inplace`")
    args = ap.parse_args(argv)

    if args.library:
        torch.ops.load_library(args.library)
    else:
        import torch_inplace  # noqa: F401  (registers torch.ops.inplace.*)

    g = torch.Generator().manual_seed(0)
    names = ["transpose_", "aos_to_soa_", "batched_inverse"]
    aos = torch.randn(2, 50, 3, generator=g, dtype=torch.float64)
    a = torch.randn(8, 5, 5, generator=g, dtype=torch.float64) + 5 * torch.eye(5, dtype=torch.float64)
    inputs = [torch.arange(24, dtype=torch.float32).reshape(4, 6), aos, a]
    expected = [inputs[0].mT.contiguous(), inputs[1].mT.contiguous(), torch.linalg.inv(a)]
    module = InplaceModule(names, inputs)
    module.expected = expected
    scripted = torch.jit.script(module)
    got = scripted(inputs)
    for name, g_, e in zip(names, got, expected):
        torch.testing.assert_close(g_, e, msg=lambda m, n=name: f"{n}: scripted result differs from reference: {m}")
    scripted.save(args.out)
    print(f"make_module: saved {args.out} ({', '.join(names)}); scripted results match the references")
    return 0


if __name__ == "__main__":
    sys.exit(main())

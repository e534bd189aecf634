"""Framework integration of the transposition ops: autograd, opcheck, torch.compile, torch.export, TorchScript,
CUDA graphs. (The linear-algebra ops have the same checks in test_lu.py / test_inverse.py.)"""
import contextlib
import subprocess
import textwrap

import pytest
import torch
from torch.library import opcheck

import torch_inplace
from conftest import HAS_GPU, PY, devices, python_subprocess_env, rand, ref_transpose

INPLACE_OPS = [torch.ops.inplace.transpose_, torch.ops.inplace.aos_to_soa_, torch.ops.inplace.soa_to_aos_]


# ---- autograd --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op", INPLACE_OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3), (7, 2)])
def test_gradcheck(op, shape, device):
    def f(x):
        y = x * 1.5  # in-place ops need a non-leaf
        return op(y) * torch.arange(y.numel(), dtype=y.dtype, device=y.device).reshape(y.shape)

    x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradgradcheck(f, (x,))


def test_backward_applies_inverse_permutation():
    x = torch.randn(4, 7, requires_grad=True)
    y = x * 1
    torch_inplace.transpose_(y)
    g = torch.randn(7, 4)
    y.backward(g)
    torch.testing.assert_close(x.grad, g.mT)


def test_retain_grad_after_and_hook_before_the_transposition():
    # The README's advice: retain_grad() after the op gives the gradient in the new shape; a hook registered before it
    # gets the gradient of the values before it, as PyTorch's t_() gives.
    W = torch.arange(6.0).view(3, 2)
    for transpose in (torch_inplace.transpose_, torch.Tensor.t_):
        x = torch.randn(2, 3, requires_grad=True)
        y = x * 1
        seen = []
        y.register_hook(seen.append)
        transpose(y)
        y.retain_grad()
        (y * W).sum().backward()
        assert torch.equal(y.grad, W), transpose
        assert torch.equal(seen[0], W.mT), transpose
        assert torch.equal(x.grad, W.mT), transpose


def test_version_counter_invalidates_saved_tensors():
    x = torch.randn(4, 7, requires_grad=True)
    y = x * 1
    z = y.view(-1).sin()  # saves the view y.view(-1)
    del z
    w = y * 2
    torch_inplace.transpose_(w)
    w.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))


def test_leaf_refused_with_pytorch_message():
    x = torch.randn(3, 4, requires_grad=True)
    before = x.detach().clone()
    with pytest.raises(RuntimeError, match="^transpose_: a leaf Variable that requires grad is being used in an in-"):
        torch_inplace.transpose_(x)
    assert x.shape == (3, 4) and torch.equal(x.detach(), before)
    with torch.no_grad():  # allowed under no_grad, as for PyTorch's own in-place ops
        torch_inplace.transpose_(x)
    assert x.shape == (4, 3)


def test_inference_mode():
    with torch.inference_mode():
        x = torch.randn(5, 3)
        ref = ref_transpose(x)
        torch_inplace.transpose_(x)
        torch.testing.assert_close(x, ref, rtol=0, atol=0)


IN_PLACE_WRITERS = {
    "transpose_": torch_inplace.transpose_,
    "aos_to_soa_": torch_inplace.aos_to_soa_,
    "soa_to_aos_": torch_inplace.soa_to_aos_,
    "_transpose_data_": torch.ops.inplace._transpose_data_,
    "inverse_": torch_inplace.inverse_,
    "_inverse_data_": torch.ops.inplace._inverse_data_,
    "lu_factor_": torch_inplace.lu_factor_,
}


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", list(IN_PLACE_WRITERS))
def test_normal_tensor_written_in_inference_mode_invalidates_saved_tensors(name, device):
    """A normal tensor updated inside inference mode bumps its version (the ADInplaceOrView kernels), so a backward
    that saved it fails as for y.mul_(2) there, instead of using the overwritten values."""
    w = (torch.randn(4, 4, dtype=torch.float64, device=device) + 4 * torch.eye(4, device=device)).requires_grad_()
    y = w * 1
    z = y.sin()  # saves y
    version = y._version
    with torch.inference_mode():
        IN_PLACE_WRITERS[name](y)
    assert y._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


NOT_DENSE = {
    "sparse": lambda a: a.to_sparse(),
    "sparse_csr": lambda a: a.to_sparse_csr(),
    "quantized": lambda a: torch.quantize_per_tensor(a, 0.1, 0, torch.qint8),
    "nested": lambda a: torch.nested.nested_tensor([a, a]),
    "mkldnn": lambda a: a.to_mkldnn(),
}
ALL_OPS = {
    "transpose_": lambda x: torch.ops.inplace.transpose_(x),
    "aos_to_soa_": lambda x: torch.ops.inplace.aos_to_soa_(x),
    "soa_to_aos_": lambda x: torch.ops.inplace.soa_to_aos_(x),
    "_transpose_data_": lambda x: torch.ops.inplace._transpose_data_(x),
    "lu_factor": lambda x: torch.ops.inplace.lu_factor(x),
    "lu_factor_ex": lambda x: torch.ops.inplace.lu_factor_ex(x),
    "lu_factor_": lambda x: torch.ops.inplace.lu_factor_(x),
    "batched_inverse": lambda x: torch.ops.inplace.batched_inverse(x),
    "batched_inverse_ex": lambda x: torch.ops.inplace.batched_inverse_ex(x),
    "inverse_": lambda x: torch.ops.inplace.inverse_(x),
    "_inverse_data_": lambda x: torch.ops.inplace._inverse_data_(x),
}


@pytest.mark.parametrize("inference", [False, True], ids=["grad_mode", "inference_mode"])
@pytest.mark.parametrize("kind", list(NOT_DENSE))
@pytest.mark.parametrize("name", list(ALL_OPS))
def test_tensors_without_dense_storage_refused_by_the_op(name, kind, inference):
    """Sparse, quantized, nested and MKL-DNN tensors: the op's own refusal in every mode. Inside inference_mode
    (autograd's kernels skipped) batched_inverse & co. reached the dispatcher's "Could not run 'inplace::...' with
    arguments from the 'SparseCPU' backend" (a NotImplementedError)."""
    if kind == "mkldnn" and not torch.backends.mkldnn.is_available():
        pytest.skip("no MKL-DNN in this build")
    a = torch.randn(3, 3)
    op = name.replace("_data_", "_").lstrip("_")  # the data ops name the op that calls them
    with torch.inference_mode() if inference else contextlib.nullcontext():
        x = NOT_DENSE[kind](a)
        with pytest.raises(RuntimeError, match=f"^{op}: expected ") as info:
            ALL_OPS[name](x)
    assert info.type is RuntimeError  # not the dispatcher's NotImplementedError


@pytest.mark.parametrize("op", INPLACE_OPS, ids=lambda o: o.__name__)
def test_inference_tensor_outside_inference_mode_refused(op):
    """As PyTorch refuses in-place updates of inference tensors outside InferenceMode: before a byte moves."""
    with torch.inference_mode():
        x = torch.randn(5, 3)
    before = x.clone()
    with pytest.raises(RuntimeError, match=op.__name__ + ": expected a tensor that may be updated in place, got an "
                       "inference tensor outside torch.inference_mode"):
        op(x)
    assert x.shape == (5, 3) and torch.equal(x, before)


@pytest.mark.parametrize("op", INPLACE_OPS, ids=lambda o: o.__name__)
def test_forward_ad_dual_tensor_refused(op):
    """A tangent cannot follow an in-place change of shape: refused up front (as under torch.func), not after the
    bytes moved."""
    import torch.autograd.forward_ad as fwAD

    primal = torch.arange(12.0).reshape(3, 4)
    with fwAD.dual_level():
        d = fwAD.make_dual(primal.clone(), torch.ones(3, 4))
        with pytest.raises(RuntimeError, match=op.__name__ + ": expected a tensor without a forward-mode AD tangent"):
            op(d)
        assert d.shape == (3, 4) and torch.equal(fwAD.unpack_dual(d).primal, primal)
        # Inside torch.inference_mode() too (forward AD is off there, and Tensor._fw_grad answered "none"), for the
        # dual tensor and for a view of it.
        for t in (d, d[1:]):
            with torch.inference_mode():
                with pytest.raises(RuntimeError, match=op.__name__ + ": expected a tensor without a forward-mode AD"):
                    op(t)
        assert d.shape == (3, 4) and torch.equal(fwAD.unpack_dual(d).primal, primal)
        assert fwAD.unpack_dual(d).tangent.shape == (3, 4)


class _CountingMode(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("mode", ["counting", "flop_counter"])
def test_dispatch_mode_keeps_every_check(mode):
    """Under a TorchDispatchMode (FlopCounterMode, a user's mode) the caller's plain tensors are checked as in eager
    mode: a view of a live tensor is refused, the tensor unchanged; a tensor that owns its storage transposes."""
    from torch.utils.flop_counter import FlopCounterMode

    def make_mode():
        return _CountingMode() if mode == "counting" else FlopCounterMode(display=False)

    base = torch.arange(24.0).reshape(4, 6)
    before = base.clone()
    view = base.view(6, 4)
    with make_mode():
        with pytest.raises(RuntimeError, match="transpose_: expected a tensor whose storage no other tensor shares"):
            torch_inplace.transpose_(view)
        alias = base.detach()
        with pytest.raises(RuntimeError, match="transpose_: expected a tensor whose storage no other tensor shares"):
            torch_inplace.transpose_(alias)
    assert torch.equal(base, before) and view.shape == (6, 4)
    del view, alias
    x = torch.randn(5, 7)
    ref = ref_transpose(x)
    with make_mode() as m:
        torch_inplace.transpose_(x)
    torch.testing.assert_close(x, ref, rtol=0, atol=0)
    if mode == "counting":
        assert m.calls >= 1


class _PassThrough(torch.Tensor):
    """A subclass with memory of its own that runs every op on itself (torch.Tensor._make_subclass)."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        with torch.utils._mode_utils.no_dispatch():
            return func(*args, **(kwargs or {}))


def test_subclass_with_its_own_memory_keeps_every_check():
    """A __torch_dispatch__ subclass made of a real tensor is the caller's tensor, not a framework one (fake tensors
    have meta storage, wrapper subclasses none with data): sharing its storage with a tensor the caller holds, it
    is refused and both are unchanged (it used to be transposed, leaving the other tensor's shape over permuted
    bytes); holding its storage alone, it transposes. TwoTensor, a wrapper, dispatches to its inner tensors."""
    from torch.testing._internal.two_tensor import TwoTensor

    base = torch.arange(12.0).reshape(3, 4).clone()
    before = base.clone()
    s = torch.Tensor._make_subclass(_PassThrough, base)
    with pytest.raises(RuntimeError, match="transpose_: expected a tensor whose storage no other tensor shares"):
        torch_inplace.transpose_(s)
    assert s.shape == (3, 4) and base.shape == (3, 4) and torch.equal(base, before)
    del s
    s = torch.Tensor._make_subclass(_PassThrough, torch.randn(5, 7))
    ref = ref_transpose(s.as_subclass(torch.Tensor))
    y = torch_inplace.transpose_(s)
    assert y is s and type(y) is _PassThrough
    torch.testing.assert_close(y.as_subclass(torch.Tensor), ref, rtol=0, atol=0)
    t = TwoTensor(torch.randn(3, 4), torch.randn(3, 4))
    a, b = ref_transpose(t.a), ref_transpose(t.b)
    torch_inplace.transpose_(t)
    assert t.shape == (4, 3) and torch.equal(t.a, a) and torch.equal(t.b, b)


def _transpose_view_of_input(x):
    return torch_inplace.transpose_(x.view(x.shape[1], x.shape[0])) + 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_refuses_view_of_input(backend):
    """Eager mode refuses transposing a view of a tensor the caller still holds; so does torch.compile, at trace time
    (its graph would otherwise write the permuted bytes back into the input, the input's shape unchanged)."""
    torch._dynamo.reset()
    cf = torch.compile(_transpose_view_of_input, fullgraph=True, backend=backend)
    x = torch.arange(24.0).reshape(4, 6).clone()
    before = x.clone()
    with pytest.raises(Exception, match="transpose_: expected a tensor whose storage no other tensor shares, got a "
                       "view of a live tensor"):
        cf(x)
    assert x.shape == (4, 6) and torch.equal(x, before)
    with pytest.raises(RuntimeError, match="transpose_: expected a tensor whose storage no other tensor shares"):
        _transpose_view_of_input(x)
    assert torch.equal(x, before)


@pytest.mark.parametrize("fullgraph", [False, True])
def test_compile_workspace_limit_does_not_leak(fullgraph):
    """The workspace calls stay out of compiled code (torch.compiler.disable): Dynamo used to run the C++ op that
    enters a limit while it traced, so the limit outlived the context (a failed fullgraph trace, or a graph break with
    the exit never run) and later eager calls on the thread were refused. Without fullgraph the context works as in
    eager mode (the limit applies inside, not after); with it, compiling fails and leaves the limit as it was."""
    torch._dynamo.reset()

    def f(x):
        with torch_inplace.workspace_limit(0):
            y = torch_inplace.transpose_(x * 1)
        torch_inplace.set_workspace_limit(1 << 20)
        return y + torch_inplace.get_workspace_limit()

    cf = torch.compile(f, fullgraph=fullgraph, backend="aot_eager")
    try:
        if fullgraph:
            with pytest.raises(torch._dynamo.exc.Unsupported):
                cf(torch.randn(4, 4))
        else:
            x = torch.randn(64, 64)  # a square takes no scratch
            torch.testing.assert_close(cf(x), x.mT + (1 << 20))
            with pytest.raises(RuntimeError, match="transpose_: no algorithm fits the workspace limit of 0 B"):
                cf(torch.randn(301, 457))
            torch_inplace.set_workspace_limit(None)
        assert torch_inplace.get_workspace_limit() == -1
        x = torch.randn(301, 457)
        torch.testing.assert_close(torch_inplace.transpose_(x.clone()), x.mT)
    finally:
        torch_inplace.set_workspace_limit(None)


def _view_of_live(b: torch.Tensor) -> torch.Tensor:
    c = b.clone()
    torch.ops.inplace.transpose_(c.view(c.shape[1], c.shape[0]))
    return c


def _view_of_temporary(b: torch.Tensor) -> torch.Tensor:
    v = b.clone().view(b.shape[1], b.shape[0])
    return torch.ops.inplace.transpose_(v)


def test_torchscript_refuses_view_of_live_tensor():
    """Without Python objects (TorchScript, C++) a base that anything else still holds is live too."""
    b = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="transpose_: expected a tensor whose storage no other tensor shares, got a "
                       "view of a live tensor"):
        torch.jit.script(_view_of_live)(b)
    got = torch.jit.script(_view_of_temporary)(b)  # the base lives only through the view: taken
    torch.testing.assert_close(got, ref_transpose(b.view(3, 2)), rtol=0, atol=0)


# ---- opcheck: every default check, no expected failures -----------------------------------------------------


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op", INPLACE_OPS + [torch.ops.inplace._transpose_data_], ids=lambda o: o.__name__)
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 4), (1, 6), (0, 3), (64, 64)])
def test_opcheck(op, shape, device):
    opcheck(op, (rand(shape, torch.float32, device),))
    opcheck(op, (rand(shape, torch.float64, device).requires_grad_() * 1,))


# ---- torch.compile / torch.export ---------------------------------------------------------------------------


def _model_fn(x):
    y = torch.ops.inplace.transpose_(x * 2)
    z = torch.ops.inplace.aos_to_soa_(y + 1)
    return z.sum(-1), y


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph(backend, dynamic):
    torch._dynamo.reset()
    f = torch.compile(_model_fn, fullgraph=True, backend=backend, dynamic=dynamic)
    for shape in [(5, 7), (6, 9)]:
        x = torch.randn(shape)
        for got, want in zip(f(x), _model_fn(x)):
            torch.testing.assert_close(got, want)


def _transpose_input_then_scale(x):
    torch.ops.inplace.transpose_(x)
    return x * 3


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
def test_compile_mutating_an_input(backend, mode):
    """A graph input transposed in place (data and shape): the compiled function leaves the input transposed, as
    eager does, with grad mode on or off and in inference mode (PyTorch's own x.t_(); x.mul_(2) is refused, see
    below). Under no_grad the data op once ran with grad mode off, and functionalization then kept its write-back
    inside the graph as a copy_ into the input's old shape: the function failed to compile."""
    torch._dynamo.reset()
    cf = torch.compile(_transpose_input_then_scale, fullgraph=True, backend=backend)
    context = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[mode]
    for shape in [(4, 6), (4, 6), (5, 9), (2, 3, 7)]:
        with context():
            x = torch.randn(shape)
            ref = ref_transpose(x)
            out = cf(x)
        assert x.shape == ref.shape
        torch.testing.assert_close(x, ref, rtol=0, atol=0)
        torch.testing.assert_close(out, ref * 3)


_INPUT_MUTATIONS = {
    "transpose_": lambda B: torch_inplace.transpose_(B) * torch.arange(12.0, dtype=B.dtype).reshape(4, 3),
    "inverse_": lambda B: torch_inplace.inverse_(B) * 2,
    "lu_factor_": lambda B: (torch_inplace.lu_factor_(B), B)[1] * 2,
    # views that are not contiguous (in place in B's storage / through a copy written back)
    "inverse_ of B.mT": lambda B: (torch_inplace.inverse_(B.mT), B)[1] * 2,
    "lu_factor_ of B[::2]": lambda B: (torch_inplace.lu_factor_(B[::2]), B)[1] * 2,
}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", list(_INPUT_MUTATIONS))
def test_compile_mutating_an_input_that_requires_grad(name, backend):
    """A graph input that requires grad (not a leaf) updated in place: the same values, shape and gradient as eager.
    The ops' autograd Functions once ran their backend with grad mode off (Function::apply's), and
    functionalization took that for a mutation autograd does not see: the compiled function's gradient skipped the
    op (inverse_ and lu_factor_ came back as the identity's), and a transposed input failed to compile."""
    torch._dynamo.reset()
    fn = _INPUT_MUTATIONS[name]
    shape = (2, 3, 4) if name == "transpose_" else (2, 4, 4)
    A = torch.randn(shape, dtype=torch.float64)
    if name != "transpose_":
        A = A + 4 * torch.eye(4, dtype=torch.float64)
    results = []
    for f in (fn, torch.compile(fn, fullgraph=True, backend=backend)):
        leaf = A.clone().requires_grad_()
        B = leaf * 1
        out = f(B)
        out.sum().backward()
        results.append((out.detach(), B.detach().clone(), leaf.grad))
    (out_e, b_e, g_e), (out_c, b_c, g_c) = results
    assert b_c.shape == b_e.shape
    torch.testing.assert_close(out_c, out_e)
    torch.testing.assert_close(b_c, b_e)
    torch.testing.assert_close(g_c, g_e)


@pytest.mark.parametrize("view", ["x[2]", "x[1:].mT"])
@pytest.mark.parametrize("name", ["inverse_", "lu_factor_"])
def test_compile_inplace_on_a_view_with_dynamic_shapes(name, view):
    """inverse_ / lu_factor_ on a view with a storage offset inside compiled code, called with three sizes (the second
    recompiles with dynamic shapes): the same values as eager. PyTorch 2.11's inductor drops such a view's storage
    offset when a custom op mutates it (silently wrong values); the Python functions copy back through the view
    there instead (linalg._copies_back)."""
    torch._dynamo.reset()
    op = getattr(torch_inplace, name)
    take = {"x[2]": lambda x: x[2], "x[1:].mT": lambda x: x[1:].mT}[view]

    def body(x):
        op(take(x))
        return x * 1

    compiled = torch.compile(body, backend="inductor")
    for n in (3, 5, 6):
        x = torch.randn(4, n, n, dtype=torch.float64) + n * torch.eye(n, dtype=torch.float64)
        want = body(x.clone())
        got = x.clone()
        out = compiled(got)
        torch.testing.assert_close(got, want, msg=lambda m: f"n={n}: {m}")
        torch.testing.assert_close(out, want)


@pytest.mark.xfail(strict=True, raises=torch._dynamo.exc.TorchDynamoException,
                   reason="upstream limitation this library inherits: data + shape mutation of a graph input")
def test_compile_builtin_input_data_and_shape_mutation():
    torch._dynamo.reset()

    def f(x):
        x.t_()
        x.mul_(2)
        return x * 3

    torch.compile(f, fullgraph=True, backend="aot_eager")(torch.randn(4, 6))


@pytest.mark.parametrize("op", [torch.ops.inplace.transpose_, torch_inplace.transpose_], ids=["ops", "wrapper"])
def test_compile_backward_and_shape_after_the_call(op):
    """Inside torch.compile the returned tensor carries the new shape (use it: y = transpose_(y))."""
    torch._dynamo.reset()

    def f(x):
        y = x.sin() * 1
        y = op(y)
        return (y * torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum(), y.shape[0]

    x1 = torch.randn(3, 5, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    got, rows = torch.compile(f, fullgraph=True, backend="aot_eager")(x1)
    want, want_rows = f(x2)
    assert rows == want_rows == 5
    got.backward()
    want.backward()
    torch.testing.assert_close(x1.grad, x2.grad)


def test_compile_view_of_a_temporary_is_refused_and_a_new_tensor_taken():
    """Inside a compiled function a view is refused even where its base is a dropped temporary (the tracer holds
    every tensor, so it looks live); a tensor made by an op that returns a new one is taken (README)."""
    torch._dynamo.reset()

    def view_of_temporary(imgs):
        imgs = (imgs + 0).view(imgs.shape[0], -1, 3)
        return torch_inplace.aos_to_soa_(imgs)

    def new_tensor(imgs):
        imgs = (imgs + 0).reshape(imgs.shape[0], -1, 3).clone()
        return torch_inplace.aos_to_soa_(imgs)

    im = torch.randint(0, 255, (2, 4, 4, 3), dtype=torch.uint8)
    want = im.reshape(2, 16, 3).mT.contiguous()
    torch.testing.assert_close(view_of_temporary(im), want, rtol=0, atol=0)  # eager takes it
    with pytest.raises(torch._dynamo.exc.TorchDynamoException, match="aos_to_soa_: .*view of a live tensor"):
        torch.compile(view_of_temporary, fullgraph=True, backend="aot_eager")(im)
    got = torch.compile(new_tensor, fullgraph=True, backend="aot_eager")(im)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.xfail(strict=True, raises=torch._inductor.exc.InductorError,
                   reason="inductor (2.11) with dynamic shapes: decompose_auto_functionalized's replace_by_example "
                          "asserts on a second in-place transposition of a transposed tensor (pytorch/pytorch#181735)")
@pytest.mark.parametrize("dynamic", [True, None], ids=["dynamic", "default-second-shape"])
def test_compile_inductor_dynamic_transposing_twice(dynamic):
    torch._dynamo.reset()

    def g(x):
        y = torch_inplace.transpose_(x * 1)
        y = torch_inplace.transpose_(y)
        return y + 0

    cg = torch.compile(g, fullgraph=True, dynamic=dynamic)
    for shape in [(3, 5), (4, 7)]:  # the default mode recompiles with dynamic sizes at the second shape
        x = torch.randn(shape)
        torch.testing.assert_close(cg(x), x)


@pytest.mark.xfail(strict=True, raises=torch._dynamo.exc.TorchDynamoException,
                   reason="Dynamo (2.11) does not refresh a tensor variable's shape after an in-place metadata change "
                          "when the result is discarded, for PyTorch's own y.t_() too: use the returned tensor")
@pytest.mark.parametrize("which", ["inplace.transpose_", "builtin t_"])
def test_compile_shape_of_discarded_result(which):
    torch._dynamo.reset()

    def f(x):
        y = x * 1
        if which == "builtin t_":
            y.t_()
        else:
            torch.ops.inplace.transpose_(y)
        return y * torch.ones(y.shape)

    torch.compile(f, fullgraph=True, backend="aot_eager")(torch.randn(3, 5))


class _Module(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        torch.ops.inplace.transpose_(y)
        return torch.ops.inplace.soa_to_aos_(y * 2)


def test_export():
    x = torch.randn(5, 7)
    ep = torch.export.export(_Module(), (x,))
    torch.testing.assert_close(ep.module()(x), _Module()(x))
    torch.testing.assert_close(ep.run_decompositions().module()(x), _Module()(x))


# ---- TorchScript ------------------------------------------------------------------------------------------------


class _Scripted(torch.nn.Module):
    def forward(self, x: torch.Tensor, a: torch.Tensor):
        y = x * 2
        torch.ops.inplace.transpose_(y)
        z = torch.ops.inplace.aos_to_soa_(y.contiguous())
        return z, torch.ops.inplace.batched_inverse(a)


def test_torchscript_save_and_load_in_fresh_process(tmp_path):
    scripted = torch.jit.script(_Scripted())
    x = torch.randn(6, 10)
    a = torch.randn(3, 5, 5, dtype=torch.float64) + 5 * torch.eye(5, dtype=torch.float64)
    want = scripted(x, a)
    torch.testing.assert_close(want[0], (x * 2).mT.contiguous().mT.contiguous())
    torch.testing.assert_close(want[1], torch.linalg.inv(a))
    path = tmp_path / "scripted.pt"
    scripted.save(str(path))
    torch.save({"x": x, "a": a, "want": list(want)}, tmp_path / "io.pt")
    code = textwrap.dedent(f"""
        import torch, torch_inplace
        m = torch.jit.load({str(path)!r})
        io = torch.load({str(tmp_path / 'io.pt')!r})
        got = m(io["x"], io["a"])
        for g, w in zip(got, io["want"]):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        print("fresh process OK", tuple(got[0].shape))
    """)
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=python_subprocess_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"fresh process OK {tuple(want[0].shape)}" in out.stdout


# ---- fork safety ---------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
def test_import_and_cpu_use_leave_cuda_uninitialized_for_forked_workers():
    # DataLoader workers are forked: a parent that initialized CUDA (even the driver alone, as cudaGetDeviceCount
    # does) leaves them unable to use the GPU. Importing the package, its CPU ops and its queries must not.
    code = textwrap.dedent("""
        import os, torch, torch_inplace
        x = torch.randn(300, 7)
        torch_inplace.transpose_(x)
        torch_inplace.batched_inverse(torch.eye(3).expand(2, 3, 3))
        torch_inplace.plan((300, 7), torch.float32, "cpu")
        torch_inplace.built_with_gpu()
        torch_inplace.get_workspace_limit()
        assert not torch.cuda.is_initialized(), "the parent initialized CUDA"
        pid = os.fork()
        if pid == 0:
            try:
                y = torch.randn(1000, 3, device="cuda")
                want = y.mT.contiguous()
                torch_inplace.transpose_(y)
                torch.testing.assert_close(y, want, rtol=0, atol=0)
                A = torch.eye(4, device="cuda").expand(8, 4, 4) * 2
                torch.testing.assert_close(torch_inplace.batched_inverse(A), A / 4)
            except BaseException as e:
                print("child failed:", repr(e), flush=True)
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the forked child could not use the GPU"
        print("fork OK")
    """)
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=python_subprocess_env(), timeout=300)
    assert out.returncode == 0 and "fork OK" in out.stdout, out.stdout + out.stderr


# ---- CUDA graphs --------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
@pytest.mark.parametrize("shape", [(1024, 1024), (1000, 3), (3001, 1999), (8, 300, 301)])
def test_cuda_graph_capture_and_replay(shape):
    x = torch.randn(shape, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up (plans, caches) outside capture
        torch_inplace.transpose_(x)
        torch_inplace.transpose_(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.ops.inplace._transpose_data_(x)  # data-only op: the shape stays fixed across replays
    for _ in range(3):
        x.copy_(torch.randn(shape, device="cuda"))
        ref = x.reshape(*shape[:-2], shape[-2], shape[-1]).mT.contiguous().reshape(shape)
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(x, ref, rtol=0, atol=0)


def test_call_without_grad_bumps_version_and_records_nothing():
    """Without a gradient to record the op skips autograd's node, but still bumps the version counter: a tensor
    saved for another op's backward and then transposed in place is refused at backward, as PyTorch does."""
    w = torch.randn(4, 7, requires_grad=True)
    x = torch.randn(4, 7)
    y = x * w  # saves x for w's gradient
    v = x._version
    torch_inplace.transpose_(x)
    assert x._version > v and x.grad_fn is None and not x.requires_grad
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # With a gradient to record the graph node is there.
    z = torch.randn(4, 7, requires_grad=True) * 1
    torch_inplace.transpose_(z)
    assert z.grad_fn is not None

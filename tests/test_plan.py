"""The planner's Python face (plan / explain), the workspace limit and accounting, and empty_transposable."""
import contextlib
import sys

import pytest
import torch

import torch_inplace
from conftest import devices, num_threads, rand, ref_transpose


@pytest.fixture
def two_threads():
    """The CPU planner's choices depend on the thread count (from 16 threads on, Catanzaro goes ahead of the cut for
    elements of 8 bytes or more): these expectations are those of 2 threads."""
    with num_threads(2):
        yield


def test_plan_picks_by_shape(two_threads):
    assert torch_inplace.plan((0, 5)).algorithm == "noop"
    assert torch_inplace.plan((1, 5)).algorithm == "noop"
    assert torch_inplace.plan((64, 64)).algorithm == "square"
    assert torch_inplace.plan((100000, 3)).algorithm == "skinny"
    # sides with a divisor of a good block size: Karlsson's three stages; factor-poor ones: a few rows or columns
    # cut first; Catanzaro where forced (or where the cut would not fit the workspace)
    assert torch_inplace.plan((3000, 2000)).algorithm == "tiled32"
    assert torch_inplace.plan((2000, 3000)).algorithm == "tiled32"
    assert torch_inplace.plan((3001, 2003)).algorithm == "cut"
    assert torch_inplace.plan((3000, 2003)).algorithm == "cut"  # one side factor-poor is enough
    assert torch_inplace.plan((3001, 2003), algorithm="c2r").algorithm == "c2r"
    p = torch_inplace.plan((2, 3001, 2003), torch.float64, algorithm="c2r")
    assert isinstance(p, torch_inplace.Plan) and p.scratch_bytes > 0
    assert "c2r" in p.explanation and "2 x (3001 x 2003)" in p.explanation and "8-byte" in p.explanation
    p = torch_inplace.plan((2, 3001, 2003), torch.float64)
    assert "cut of 1 row and 1 column (" in p.explanation, p
    p = torch_inplace.plan((3000, 2003), torch.float64)
    assert "of the columns: Karlsson's cut of 1 column (" in p.explanation, p
    p = torch_inplace.plan((2, 3000, 2000), torch.float64)
    assert p.scratch_bytes > 0 and "Karlsson" in p.explanation and "2 x (3000 x 2000)" in p.explanation


def test_plan_scratch_is_small():
    """Scratch is O(max(m, n)) per thread: far below the tensor for large shapes."""
    for shape in [(3000, 2000), (3001, 2003), (20000, 19999), (20000, 19998), (10**6, 7)]:
        p = torch_inplace.plan(shape, torch.float32)
        assert p.scratch_bytes < 0.01 * shape[0] * shape[1] * 4 + (1 << 20), (shape, p)


def test_plan_forced_and_refused():
    assert torch_inplace.plan((30, 20), algorithm="r2c").algorithm == "r2c"
    with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: algorithm 'square' cannot transpose a 30 x 20"):
        torch_inplace.plan((30, 20), algorithm="square")
    with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: expected algorithm to be one of"):
        torch_inplace.plan((30, 20), algorithm="nope")
    with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: expected a shape with at least 2 dims"):
        torch_inplace.plan((30,))


def test_plan_refuses_devices_without_kernels():
    """The caller is named: a device type the library has no kernels for, and a GPU plan from a CPU-only build."""
    with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: expected a CPU or CUDA/ROCm device, got xpu"):
        torch_inplace.plan((30, 20), torch.float32, "xpu")
    if torch_inplace.built_with_gpu():
        return
    with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: this build of torch_inplace has no GPU kernels"):
        torch_inplace.plan((30, 20), torch.float32, "cuda")


@pytest.mark.parametrize("shape", [(3001, 1999), (3000, 2000)])
def test_plan_scratch_matches_what_the_op_records(shape):
    x = rand(shape, torch.float32)
    expected = torch_inplace.plan(x.shape, x.dtype).scratch_bytes
    torch_inplace.reset_workspace_stats()
    torch_inplace.transpose_(x)
    stats = torch_inplace.workspace_stats()
    assert stats.calls == 1 and stats.last_bytes == expected and stats.peak_bytes == expected


def test_workspace_stats_over_several_calls():
    # peak is the largest call's scratch (not the latest's), total their sum, calls every op call; reset zeroes all.
    shapes = [(3001, 1999), (301, 199), (64, 64), (1000, 3000)]
    need = [torch_inplace.plan(s, torch.float32).scratch_bytes for s in shapes]
    assert need[0] > need[1] > 0 and need[2] == 0  # a big call, a smaller one after it, one without scratch
    torch_inplace.reset_workspace_stats()
    for s in shapes:
        torch_inplace.transpose_(rand(s, torch.float32))
    stats = torch_inplace.workspace_stats()
    assert stats == (need[-1], max(need), sum(need), len(shapes)), (stats, need)
    torch_inplace.reset_workspace_stats()
    assert torch_inplace.workspace_stats() == (0, 0, 0, 0)


@pytest.mark.parametrize("device", devices())
def test_workspace_limit_context_manager(device, monkeypatch):
    if device == "cuda":
        # GPU plans whose column steps fit a cluster need no scratch; the universal column engine does.
        monkeypatch.setenv("TORCH_INPLACE_GPU_COLUMNS", "universal")
        monkeypatch.setenv("TORCH_INPLACE_GPU_ONCHIP", "0")  # small tensors would go on chip, with no scratch
        torch.ops.inplace._clear_plan_cache()  # plans are cached per shape; knobs apply to new plans
    x = rand((300, 200), torch.float32, device)
    need = torch_inplace.plan(x.shape, x.dtype, device).scratch_bytes
    assert need > 16
    assert torch_inplace.get_workspace_limit() == -1
    with torch_inplace.workspace_limit(need):
        assert torch_inplace.get_workspace_limit() == need
        ref = ref_transpose(x)
        torch_inplace.transpose_(x)
        torch.testing.assert_close(x, ref, rtol=0, atol=0)
    assert torch_inplace.get_workspace_limit() == -1
    y = rand((300, 200), torch.float32, device)
    before = y.clone()
    with torch_inplace.workspace_limit(16):
        with pytest.raises(RuntimeError, match=r"transpose_: no algorithm fits the workspace limit of 16 B"):
            torch_inplace.transpose_(y)
        with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: no algorithm fits the workspace limit"):
            torch_inplace.plan(y.shape, y.dtype, device)
        # squares need no scratch, so they still run under any limit
        z = rand((50, 50), torch.float32, device)
        ref = ref_transpose(z)
        torch_inplace.transpose_(z)
        torch.testing.assert_close(z, ref, rtol=0, atol=0)
    assert y.shape == (300, 200) and torch.equal(y, before)
    with pytest.raises(RuntimeError, match="^set_workspace_limit: expected a byte count >= 0"):
        torch_inplace.set_workspace_limit(-5)


def test_workspace_limit_context_is_per_thread():
    """A context's limit applies to its own thread's calls, over the process-wide one; overlapping contexts on two
    threads leave no stale limit behind (one global saved and restored by both did: the first thread to leave
    restored its value while the other's context was open, and the other then restored the first's)."""
    import threading

    entered, leave_a = threading.Event(), threading.Event()
    seen = {}

    def a():
        with torch_inplace.workspace_limit(100):
            entered.set()
            leave_a.wait(10)
            seen["a"] = torch_inplace.get_workspace_limit()
        seen["a_after"] = torch_inplace.get_workspace_limit()

    t = threading.Thread(target=a)
    t.start()
    assert entered.wait(10)
    assert torch_inplace.get_workspace_limit() == -1  # a's context is not this thread's
    with torch_inplace.workspace_limit(200):
        leave_a.set()
        t.join(10)
        assert torch_inplace.get_workspace_limit() == 200
    assert seen == {"a": 100, "a_after": -1}
    assert torch_inplace.get_workspace_limit() == -1
    # The process-wide limit: every thread outside a context; a context overrides it, None lifts it there.
    try:
        torch_inplace.set_workspace_limit(4096)
        other = []
        th = threading.Thread(target=lambda: other.append(torch_inplace.get_workspace_limit()))
        th.start()
        th.join(10)
        assert other == [4096]
        with torch_inplace.workspace_limit(None):
            assert torch_inplace.get_workspace_limit() == -1
            torch_inplace.transpose_(torch.randn(300, 200))  # its plan needs more than 4096 B
        assert torch_inplace.get_workspace_limit() == 4096
    finally:
        torch_inplace.set_workspace_limit(None)


def test_workspace_limit_contexts_end_in_any_order():
    """Generators and asyncio tasks that hold a context across a yield / await end their contexts out of order on
    one thread. Each exit used to restore the limit saved at its entry, which put back the limit of a context
    already left: after both had ended the thread kept a limit of 100 and refused later calls. Now the latest
    context the thread entered and has not left applies (contexts belong to the thread, as torch.no_grad()'s state
    does), and none outlives its exit."""
    import asyncio

    def gen(n):
        with torch_inplace.workspace_limit(n):
            yield torch_inplace.get_workspace_limit()
            yield torch_inplace.get_workspace_limit()

    a, b = gen(100), gen(200)
    assert (next(a), next(b)) == (100, 200)
    assert next(a) == 200  # b's context, entered last, is open on this thread
    a.close()
    assert torch_inplace.get_workspace_limit() == 200  # still b's (not the none that a's entry had seen)
    b.close()
    assert torch_inplace.get_workspace_limit() == -1
    x = torch.randn(3001, 7)
    want = x.mT.contiguous()
    assert torch_inplace.plan(x.shape).scratch_bytes > 100
    assert torch.equal(torch_inplace.transpose_(x), want)

    async def task(n, delay):
        with torch_inplace.workspace_limit(n):
            await asyncio.sleep(delay)
        return torch_inplace.get_workspace_limit()

    async def both():
        return await asyncio.gather(task(100, 0.01), task(200, 0.05))

    assert asyncio.run(both()) == [200, -1]  # the first to end still sees the other's; then none
    assert torch_inplace.get_workspace_limit() == -1


def test_workspace_limit_context_ended_on_another_thread_is_refused():
    """A context belongs to the thread that entered it: ending it on another thread (a generator resumed there)
    raises, naming workspace_limit, and leaves that thread's limit alone (the exit used to put the entering thread's
    saved limit on it)."""
    import threading

    def gen():
        with torch_inplace.workspace_limit(100):
            yield

    g = gen()
    t = threading.Thread(target=next, args=(g,))  # entered on t, which then ends
    t.start()
    t.join()
    with pytest.raises(RuntimeError, match="workspace_limit: expected the context to end on the thread that entered"):
        g.close()
    assert torch_inplace.get_workspace_limit() == -1


class _Interrupt(BaseException):
    """Stands in for a KeyboardInterrupt from a signal handler (which Python runs between any two bytecodes)."""


@contextlib.contextmanager
def _interrupt_once_at(fn_name, event, in_file=""):
    """Inside the block, a trace function raises _Interrupt once: as a frame of a function named fn_name (from a
    file whose path holds in_file) is entered (event "call") or as it returns ("return"). Yields the list that says
    whether it fired; the previous trace function (coverage's, where it runs) is restored after."""
    fired = []

    def tracer(frame, ev, arg):
        if ev == "call" and frame.f_code.co_name == fn_name and in_file in frame.f_code.co_filename and not fired:
            if event == "call":
                fired.append(True)
                raise _Interrupt()

            def local(f, e, a):
                if e == "return" and not fired:
                    fired.append(True)
                    raise _Interrupt()
                return local
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield fired
    finally:
        sys.settrace(previous)


@pytest.mark.parametrize("where", [("_new_scope", "return"), ("_enter_limit", "call"), ("_enter_limit", "return"),
                                   ("_exit_limit", "call"), ("_exit_limit", "return")])
def test_workspace_limit_interrupted_while_entering_or_leaving_leaves_no_limit(where):
    """An asynchronous exception (Ctrl-C) that lands while `with workspace_limit(n):` enters or leaves. Landing just
    after the C++ scope had opened, before the context manager held its id, or in the exit's Python frames before
    the scope closed, used to leave n on the thread for good: every later transposition with scratch was refused
    (in a stress run of timer interrupts, 62 of 638 interrupts). A trace function raises once, at the given event of
    the given helper: after the id is taken; before the scope opens; after it opened; before it closes; after.
    (contextlib's own __enter__ / __exit__ frames around the generator are two more such instants: there the scope
    stays open until the interrupt's exception is dropped, which finalizes the generator and so closes it.)"""
    assert torch_inplace.get_workspace_limit() == -1
    with _interrupt_once_at(*where) as fired:
        with pytest.raises(_Interrupt):
            with torch_inplace.workspace_limit(0):
                pass
    assert fired
    assert torch_inplace.get_workspace_limit() == -1
    x = torch.randn(3001, 7)
    want = x.mT.contiguous()
    assert torch_inplace.plan(x.shape).scratch_bytes > 0
    assert torch.equal(torch_inplace.transpose_(x), want)
    with torch_inplace.workspace_limit(5):  # and the contexts still work
        assert torch_inplace.get_workspace_limit() == 5
    assert torch_inplace.get_workspace_limit() == -1


def test_workspace_scope_ids_are_the_threads_and_open_once():
    """The private ops behind the context: an id opens once, only on the thread that handed it out, and a scope that
    never opened closes quietly only where the caller says it may not exist."""
    ops = torch.ops.inplace
    scope = int(ops._new_workspace_scope())
    ops._enter_workspace_limit(5, scope)
    try:
        assert torch_inplace.get_workspace_limit() == 5
        with pytest.raises(RuntimeError, match="workspace_limit: scope %d is open already" % scope):
            ops._enter_workspace_limit(6, scope)
        with pytest.raises(RuntimeError, match="expected a scope id from new_workspace_limit_scope_id"):
            ops._enter_workspace_limit(6, scope + 1000)
    finally:
        ops._exit_workspace_limit(scope)
    assert torch_inplace.get_workspace_limit() == -1
    ops._exit_workspace_limit(scope, False)  # gone already: no error
    with pytest.raises(RuntimeError, match="this thread has no open context"):
        ops._exit_workspace_limit(scope)


@pytest.mark.parametrize("where", [("__enter__", "return"), ("__exit__", "call")])
def test_workspace_limit_interrupted_in_contextlib_closes_when_the_exception_goes(where):
    """The two instants the context cannot guard, inside contextlib's own frames around the generator (after it
    yielded; before it resumes): the with statement does not run the exit, so the scope stays open while the
    interrupt's exception (and its traceback, which holds the generator) lives, as a REPL's sys.last_exc keeps it;
    dropping the exception finalizes the generator, whose `finally` closes the scope."""
    import gc

    held = []
    with _interrupt_once_at(*where, in_file="contextlib") as fired:
        try:
            with torch_inplace.workspace_limit(0):
                pass
        except _Interrupt as e:
            held.append(e)
    assert fired and held
    assert torch_inplace.get_workspace_limit() == 0  # while the exception lives
    held.clear()
    gc.collect()
    assert torch_inplace.get_workspace_limit() == -1


@pytest.mark.parametrize("fn", ["set_workspace_limit", "workspace_limit"])
@pytest.mark.parametrize("bad", [-5, 2**63])
def test_workspace_limit_out_of_range_names_the_function(fn, bad):
    with pytest.raises(RuntimeError, match=fn + r": expected a byte count >= 0 \(or -1 for no limit\)"):
        if fn == "workspace_limit":
            with torch_inplace.workspace_limit(bad):
                pass
        else:
            torch_inplace.set_workspace_limit(bad)
    assert torch_inplace.get_workspace_limit() == -1


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op", ["aos_to_soa_", "soa_to_aos_"])
def test_planner_refusals_name_the_op_called(op, device, monkeypatch):
    """The skinny conversions are planned under their own names: a workspace refusal names them, not the data op's
    transpose_ (the tensor is untouched)."""
    if device == "cuda":
        monkeypatch.setenv("TORCH_INPLACE_GPU_ONCHIP", "0")  # small tensors would go on chip, with no scratch
        monkeypatch.setenv("TORCH_INPLACE_GPU_COLUMNS", "universal")
        torch.ops.inplace._clear_plan_cache()
    shape = (300000, 3) if device == "cuda" else (3000, 3)
    x = rand(shape, torch.float32, device)
    before = x.clone()
    assert torch_inplace.plan(x.shape, x.dtype, device).scratch_bytes > 0
    with torch_inplace.workspace_limit(0):
        with pytest.raises(RuntimeError, match=r"^" + op + r": no algorithm fits the workspace limit of 0 B"):
            getattr(torch_inplace, op)(x)
    assert x.shape == shape and torch.equal(x, before)


def test_workspace_limit_falls_back_to_a_smaller_plan():
    # the skinny plan needs more scratch than c2r for this shape; a limit between them picks the other one
    shape = (200000, 48)
    skinny = torch_inplace.plan(shape, torch.float32, algorithm="skinny").scratch_bytes
    c2r = torch_inplace.plan(shape, torch.float32, algorithm="c2r").scratch_bytes
    lo, hi = sorted([skinny, c2r])
    with torch_inplace.workspace_limit(lo):
        p = torch_inplace.plan(shape, torch.float32)
        assert p.scratch_bytes <= lo
        if lo < hi:
            assert "workspace limit" in p.explanation


def test_empty_transposable_cpu():
    t = torch_inplace.empty_transposable(30, 20, dtype=torch.float64)
    assert t.shape == (30, 20) and t.dtype == torch.float64 and t.is_contiguous()
    t.copy_(torch.randn(30, 20, dtype=torch.float64))
    ref = ref_transpose(t)
    torch_inplace.transpose_(t)
    torch.testing.assert_close(t, ref, rtol=0, atol=0)
    t2 = torch_inplace.empty_transposable((2, 5, 7))
    assert t2.shape == (2, 5, 7) and t2.dtype == torch.get_default_dtype()


def test_plan_and_factory_refuse_what_transpose_refuses():
    for call in (lambda: torch_inplace.plan((3, 4), torch.qint8), lambda: torch_inplace.plan((2**62, 2**62))):
        with pytest.raises(RuntimeError, match=r"^torch_inplace\.plan: expected a"):
            call()
    with pytest.raises(RuntimeError, match=r"^empty_transposable: expected a non-quantized dtype"):
        torch_inplace.empty_transposable(3, 4, dtype=torch.qint8)
    with pytest.raises(RuntimeError, match=r"^empty_transposable: expected a shape of fewer than 2\^63 bytes"):
        torch_inplace.empty_transposable(2**62, 2**62)


def test_factory_and_plan_arguments_refused_naming_the_function():
    """torch.empty's own errors (an unknown device string, requires_grad with an integer dtype, a GPU without a
    driver) named neither function."""
    E = torch_inplace.empty_transposable
    cases = [
        (lambda: E(3, 4, device="bogus"), RuntimeError,
         r"^empty_transposable: expected a device .*got str 'bogus'"),
        (lambda: E(3, 4, device=1.5), TypeError, r"^empty_transposable\(\): expected a device .*got float 1.5$"),
        (lambda: E(3, 4, dtype="float32"), TypeError, r"^empty_transposable\(\): expected dtype to be a torch.dtype"),
        (lambda: E(3, 4, requires_grad=1), TypeError, r"^empty_transposable\(\): expected requires_grad to be a bool"),
        (lambda: E(3, 4, dtype=torch.int32, requires_grad=True), RuntimeError,
         r"^empty_transposable: only tensors of floating point or complex dtype can require gradients, got "
         r"requires_grad=True with dtype torch.int32"),
        (lambda: torch_inplace.plan((3, 4), device="bogus"), RuntimeError, r"^torch_inplace\.plan: expected a device"),
    ]
    if not torch.cuda.is_available():
        cases.append((lambda: E(3, 4, device="cuda"), RuntimeError,
                      r"^empty_transposable: expected an available GPU for device 'cuda', but "
                      r"torch.cuda.is_available\(\) is False"))
    for call, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            call()
    t = E(3, 4, dtype=torch.complex64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.dtype == torch.complex64


@pytest.mark.parametrize("shape", [(2**62, 0), (0, 2**62), (2**62, 0, 3), (3, 2**61, 0)])
def test_empty_shapes_with_huge_sizes(shape):
    """An empty shape has no bytes whatever its other sizes, as torch.empty sees it: the planner's size check used
    to multiply left to right and refuse (2**62, 0) while taking (0, 2**62)."""
    assert torch_inplace.plan(shape).algorithm == "noop"
    t = torch_inplace.empty_transposable(*shape)
    assert t.shape == shape and t.numel() == 0
    assert torch_inplace.transpose_(t).shape == shape[:-2] + (shape[-1], shape[-2])


def test_plan_on_meta_moves_nothing():
    p = torch_inplace.plan((300, 200), torch.float32, "meta")
    assert p.algorithm == "noop" and p.scratch_bytes == 0
    x = torch.empty(300, 200, device="meta")
    assert torch_inplace.transpose_(x).shape == (200, 300)


def test_empty_transposable_under_compile_and_opcheck():
    from torch.library import opcheck
    # Its values are uninitialised, so opcheck's comparisons of outputs do not apply.
    opcheck(torch.ops.inplace.empty_transposable.default, ([3, 4],), {"dtype": torch.float32},
            test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))

    @torch.compile(backend="aot_eager", fullgraph=True)
    def f(x):
        return torch_inplace.empty_transposable(3, 4, dtype=x.dtype).copy_(x) * 2

    x = torch.randn(3, 4)
    torch.testing.assert_close(f(x), x * 2)


def test_transpose_wrappers_are_scriptable():
    def f(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        a = torch_inplace.transpose_(x, algorithm="c2r")
        b = torch_inplace.aos_to_soa_(y)
        c = torch_inplace.soa_to_aos_(z)
        return a.sum() + b[0].sum() + c.sum()

    scripted = torch.jit.script(f)
    x, y, z = rand((7, 5), torch.float32, "cpu"), rand((40, 3), torch.float32, "cpu"), rand((3, 40), torch.float32, "cpu")
    refs = ref_transpose(x), ref_transpose(y), ref_transpose(z)
    scripted(x, y, z)
    for got, want in zip((x, y, z), refs):
        assert torch.equal(got, want)
    assert "inplace::transpose_" in str(scripted.inlined_graph)


def test_algorithms_list():
    assert set(["auto", "square", "c2r", "r2c", "skinny"]) <= set(torch_inplace.algorithms())


@pytest.mark.parametrize("bad", ["10", 1.5, True, [3]])
def test_python_arguments_are_type_checked(bad):
    """Sizes and byte counts must be integers (ints, NumPy integers, 0-dim integer tensors): a float, str or bool is a
    TypeError naming the function, not silently truncated or parsed."""
    previous = torch_inplace.get_workspace_limit()
    with pytest.raises(TypeError, match=r"set_workspace_limit\(\): expected an integer number of bytes or None"):
        torch_inplace.set_workspace_limit(bad)
    assert torch_inplace.get_workspace_limit() == previous
    with pytest.raises(TypeError, match=r"empty_transposable\(\): expected integer sizes"):
        torch_inplace.empty_transposable(bad, 3)
    with pytest.raises(TypeError, match=r"plan\(\): expected integer sizes in shape"):
        torch_inplace.plan((bad, 3))


def test_python_integer_like_arguments_are_taken():
    np = pytest.importorskip("numpy")
    previous = torch_inplace.get_workspace_limit()
    with torch_inplace.workspace_limit(np.int64(4096)):
        assert torch_inplace.get_workspace_limit() == 4096
    assert torch_inplace.get_workspace_limit() == previous
    assert torch_inplace.empty_transposable(np.int32(3), torch.tensor(4)).shape == (3, 4)
    assert torch_inplace.plan((np.int64(5), 7)).algorithm == torch_inplace.plan((5, 7)).algorithm
    with pytest.raises(TypeError, match=r"plan\(\): expected device to be a torch.device, str or int, got NoneType"):
        torch_inplace.plan((5, 5), device=None)


def test_python_wrappers_refuse_wrong_types_with_type_errors():
    """As torch's argument parser does: TypeErrors naming the function, before any op runs (a non-tensor, an
    algorithm that is not a str, a dtype given as a string or an int, a shape that is not a sequence)."""
    for fn in ("transpose_", "aos_to_soa_", "soa_to_aos_"):
        with pytest.raises(TypeError, match=fn + r"\(\): argument 't' must be Tensor, not list"):
            getattr(torch_inplace, fn)([[1, 2]])
    x = torch.randn(2, 3)
    with pytest.raises(TypeError, match=r"transpose_\(\): argument 'algorithm' must be str, not NoneType"):
        torch_inplace.transpose_(x, algorithm=None)
    assert x.shape == (2, 3)
    for dtype in ("float32", 4):
        with pytest.raises(TypeError, match=r"plan\(\): expected dtype to be a torch.dtype"):
            torch_inplace.plan((3, 5), dtype)
    with pytest.raises(TypeError, match=r"plan\(\): expected shape to be a sequence of integers, got int"):
        torch_inplace.plan(5)
    with pytest.raises(TypeError, match=r"plan\(\): expected algorithm to be a str"):
        torch_inplace.plan((3, 5), algorithm=None)


def test_empty_transposable_follows_the_default_device():
    torch.set_default_device("meta")
    try:
        assert torch_inplace.empty_transposable(3, 4).device.type == "meta"
    finally:
        torch.set_default_device(None)
    assert torch_inplace.empty_transposable(3, 4).device.type == "cpu"


def test_meta_view_with_an_offset_is_refused_as_on_real_tensors():
    for device in ("cpu", "meta"):
        x = torch.empty(8, 6, device=device)[2:]
        with pytest.raises(RuntimeError, match="transpose_: expected a tensor that owns its whole storage, got a "
                           "storage offset of 12 elements"):
            torch_inplace.transpose_(x)
        assert x.shape == (6, 6) and x.storage_offset() == 12


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_nested_tensors_are_refused_by_name():
    n = torch.nested.nested_tensor([torch.randn(3, 3), torch.randn(3, 3)])
    with pytest.raises(RuntimeError, match="transpose_: expected a regular tensor, got a nested tensor"):
        torch_inplace.transpose_(n)
    for fn in ("batched_inverse", "inverse_", "lu_factor"):
        with pytest.raises(RuntimeError, match=fn + r": expected a regular tensor of shape \(\.\.\., n, n\), got a "
                           "nested tensor"):
            getattr(torch_inplace, fn)(n)

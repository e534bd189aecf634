import sys, torch, torch_inplace
for arg in sys.argv[1:]:
    s, es = arg.split(":")
    shape = tuple(int(v) for v in s.split("x")); es = int(es)
    dt = {4: torch.float32, 8: torch.float64}[es]
    x = torch.randn(shape, device="cuda").to(dt)
    print(arg, torch_inplace.plan(shape, dt, "cuda").explanation, flush=True)
    torch.ops.inplace._transpose_data_(x); torch.cuda.synchronize()

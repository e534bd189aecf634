import faulthandler, sys, random, torch
faulthandler.enable()
sys.path.insert(0, '.')
import torch_inplace
rng = random.Random(2026)
shapes = [(rng.randrange(1000, 20000), rng.randrange(1000, 20000)) for _ in range(12)]
for s in shapes[:4]:
    for dt in (torch.float32,):
        print(s, flush=True)
        p = torch_inplace.plan(s, dt, "cuda"); print(p, flush=True)
        x = torch.randn(s, device='cuda', dtype=dt); w = x.mT.contiguous()
        torch_inplace.transpose_(x); torch.cuda.synchronize()
        print(torch.equal(x, w), flush=True)

# CPU check of round 9 (NOTES.md "Round 9"), /usr/bin/python3 from the repository root (torch 1.13,
# no GPU): the solution, pp and pps import by path into one process (three cache folders by
# digest; nvcc builds each), and on the CPU (fallback) agree bit for bit with each other and with
# the task's reference at every correctness and measure shape. Output: load_r9.txt.
import importlib.util, json, os, sys, torch
root = os.getcwd()
task = json.load(open("catalog/tasks/fp8-blockscale-gemm/task.json"))
ns = {}
exec(task["definition"]["reference"]["source"], ns)
ref = ns["fp8_blockscale_gemm"]
mods = {}
for tag, d in [("sol", "catalog/solutions/gpu/h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager/src"), ("pp", "lab/fp8-blockscale-gemm/pp"), ("pps", "lab/fp8-blockscale-gemm/pps")]:
    spec = importlib.util.spec_from_file_location("m_" + tag, os.path.join(d, "fp8_blockscale_gemm.py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); mods[tag] = m
    print(tag, "loaded", m._lib._name)
w = task["workloads"]["synthetic"]
g = torch.Generator().manual_seed(0)
for M, N, K in w["correctness"] + w["measure"]:
    nkb = -(-K // 128)
    A = torch.randint(0, 256, (M, K), dtype=torch.uint8, generator=g); A[(A & 0x7F) == 0x7F] = 0
    B = torch.randint(0, 256, (N, K), dtype=torch.uint8, generator=g); B[(B & 0x7F) == 0x7F] = 0
    sa = torch.pow(2.0, torch.randint(-4, 3, (M, nkb), generator=g).float())
    sb = torch.pow(2.0, torch.randint(-4, 3, (-(-N // 128), nkb), generator=g).float())
    r = ref(A, sa, B, sb).float()
    o = {t: m.fp8_blockscale_gemm(A, sa, B, sb).float() for t, m in mods.items()}
    print(M, N, K, "sol==pp==pps", torch.equal(o["sol"], o["pp"]) and torch.equal(o["sol"], o["pps"]), "pp vs ref max abs %.3g" % (o["pp"] - r).abs().max().item(),
          "rel-frob %.2e" % ((o["pp"] - r).norm() / r.norm().clamp_min(1e-30)).item())

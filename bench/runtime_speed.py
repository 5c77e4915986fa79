#!/usr/bin/env python3
"""Time one training step of a small GPT in cleave against PyTorch and JAX.

Five configurations, side by side, all on this machine's CPU:

  1 rank      cleave (dp=1)        vs PyTorch eager on CPU, one process
  1 rank      cleave (dp=1)        vs torch.compile (Inductor), one process
  dp=2        cleave (2 ranks)     vs torch.distributed (gloo) + DDP, 2 processes
  tp=2        cleave (2 ranks)     vs JAX on 2 host devices, the parameters
                                      sharded exactly as the cleave plan shards
                                      them (read from `cleave inspect --json`),
                                      XLA's SPMD partitioner doing the rest
  pp=2        cleave (2 ranks)     vs torch.distributed.pipelining (gloo),
                                      two stages of half the blocks each,
                                      Schedule1F1B over the plan's
                                      microbatches; the head untied in both
                                      models (a stage keeps its parameters)

The model is the zoo's GPT (GPT-2 style: learned positions, pre-LN, separate
q/k/v projections with biases, GELU-tanh MLP 4x, LM head tied to the token
embedding, mean cross-entropy, fp32) at the same batch and sequence length
with the same optimizer (AdamW, lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight
decay, or SGD with --optimizer sgd). Every process gets the same number of
threads a rank (--threads, default 1: OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for
cleave, torch.set_num_threads for PyTorch, one XLA CPU thread a device
through --xla_cpu_multi_thread_eigen=false for JAX). Each side reports the
median step time after warm-up. Every configuration runs --rounds rounds
(default 5), cleave and its peer one after the other, the order rotated
each round; the table prints each side's min and median over the rounds
and the paired ratio cleave/peer of every round (above 1: cleave is
slower), and each side's peak memory: the largest resident set of any
one of its processes (a rank) over the run. A round in which other processes used more than --max-load cores
(after --retries reruns) is left out, and a configuration with half its
rounds or more so disturbed is not reported at all (the script then exits
non-zero).

The cleave side needs only Python 3's standard library. The peers run in a
separate virtual environment, passed with --python; create it with

    python3 -m venv /tmp/peer-venv
    /tmp/peer-venv/bin/pip install torch "jax[cpu]"
    # (or torch from the PyTorch CPU wheel index where it is reachable)

    python3 bench/runtime_speed.py --python /tmp/peer-venv/bin/python
    python3 bench/runtime_speed.py --python ... --only 1rank,dp2 --steps 10

--compare-fusion also times each cleave plan with `cleave run --no-fuse`
(every instruction alone instead of a GEMM fused with its bias, activation
or batch sum) and prints fused/unfused; without --python it times only
cleave, both ways.

cleave's ranks run OpenBLAS with the kernels `cleave profile` chose for this
machine (runtime/kernels BlasKernels.h); where none was chosen yet the
script runs `cleave profile --backend cpu --quick --ranks 0` first, as a
user does once per machine, and prints the kernels used.
--no-blas-choice runs OpenBLAS's own pick instead.

The script runs itself under that interpreter in --peer mode for the PyTorch
and JAX sides. Run on an otherwise idle machine: the script reports the other
processes' CPU use during each measurement (column "other load").
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from machine_load import LoadMeter, wait_idle
from benchlib import DEFAULT_CLEAVE, ROOT

STEP_RE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)\s+time\s+([0-9.]+)\s*ms")

# ---------------------------------------------------------------------------
# Machine load: CPU seconds spent by processes other than ours.


def peer_main(args):
    cfg = json.loads(args.peer_config)
    if args.peer in ("torch", "ddp", "compile"):
        if args.peer == "compile":
            cfg["compile"] = True
        return torch_peer(cfg, distributed=args.peer == "ddp")
    if args.peer == "pipe":
        return torch_peer(cfg, distributed=True, pipeline=True)
    if args.peer == "jax":
        return jax_peer(cfg)
    raise SystemExit("unknown peer " + args.peer)


def torch_peer(cfg, distributed, pipeline=False):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(cfg["threads"])
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(0)
    L, H, NH, V, S = (cfg[k] for k in ("layers", "hidden", "heads", "vocab",
                                       "seq"))
    eps = 1e-5

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(H, eps=eps)
            self.q = nn.Linear(H, H)
            self.k = nn.Linear(H, H)
            self.v = nn.Linear(H, H)
            self.o = nn.Linear(H, H)
            self.ln_2 = nn.LayerNorm(H, eps=eps)
            self.fc = nn.Linear(H, 4 * H)
            self.proj = nn.Linear(4 * H, H)

        def forward(self, x):
            B = x.shape[0]
            h = self.ln_1(x)

            def heads(t):
                return t.view(B, S, NH, H // NH).transpose(1, 2)

            a = F.scaled_dot_product_attention(
                heads(self.q(h)), heads(self.k(h)), heads(self.v(h)),
                is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(B, S, H))
            return x + self.proj(F.gelu(self.fc(self.ln_2(x)),
                                        approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, H)
            self.wpe = nn.Embedding(S, H)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(H, eps=eps)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)

            if not cfg["tied"]:
                self.head = nn.Linear(H, V, bias=False)
                nn.init.normal_(self.head.weight, std=0.02)

        def logits(self, x):
            x = self.ln_f(x)
            if cfg["tied"]:
                return x @ self.wte.weight.t()
            return self.head(x)

        def forward(self, tokens, labels):
            x = self.wte(tokens) + self.wpe.weight[: tokens.shape[1]]
            for b in self.h:
                x = b(x)
            return F.cross_entropy(self.logits(x).view(-1, V), labels.view(-1))

    class FirstStage(nn.Module):
        """The embedding and the first half of the blocks."""

        def __init__(self, gpt):
            super().__init__()
            self.wte, self.wpe = gpt.wte, gpt.wpe
            self.h = nn.ModuleList(gpt.h[: L // 2])

        def forward(self, tokens):
            x = self.wte(tokens) + self.wpe.weight[: tokens.shape[1]]
            for b in self.h:
                x = b(x)
            return x

    class LastStage(nn.Module):
        """The other blocks, the final norm and the (untied) head."""

        def __init__(self, gpt):
            super().__init__()
            self.h = nn.ModuleList(gpt.h[L // 2:])
            self.ln_f, self.head = gpt.ln_f, gpt.head

        def forward(self, x):
            for b in self.h:
                x = b(x)
            return self.head(self.ln_f(x))

    if pipeline:
        return torch_pipeline(cfg, GPT, FirstStage, LastStage)
    rank, world = 0, 1
    model = GPT()
    if cfg.get("compile"):
        # Inductor's CPU code; the warm-up steps (not timed) compile it.
        model = torch.compile(model)
    if distributed:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        model = nn.parallel.DistributedDataParallel(model)
    if cfg["optimizer"] == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"],
                              momentum=cfg["momentum"])
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"],
                                betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    local = cfg["batch"] // world
    mb = cfg["microbatch"] or local
    g = torch.Generator().manual_seed(rank)
    times = []
    for step in range(cfg["steps"]):
        tokens = torch.randint(0, V, (local, S), generator=g)
        labels = torch.randint(0, V, (local, S), generator=g)
        if distributed:
            dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        n = local // mb
        for i in range(n):
            sl = slice(i * mb, (i + 1) * mb)
            if distributed and i < n - 1:
                with model.no_sync():
                    (model(tokens[sl], labels[sl]) / n).backward()
            else:
                (model(tokens[sl], labels[sl]) / n).backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print("PEER " + json.dumps(dict(times_ms=times,
                                        torch=torch.__version__)))
    if distributed:
        dist.destroy_process_group()


def torch_pipeline(cfg, GPT, FirstStage, LastStage):
    """Two pipeline stages over gloo with torch.distributed.pipelining,
    1F1B over the plan's microbatches, the loss averaged over them as
    cleave's is."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    V, S, B = cfg["vocab"], cfg["seq"], cfg["batch"]
    gpt = GPT()  # the same seed on both ranks: each keeps its half
    module = FirstStage(gpt) if rank == 0 else LastStage(gpt)
    del gpt
    stage = PipelineStage(module, rank, 2, torch.device("cpu"))
    mb = cfg["microbatch"] or B
    schedule = Schedule1F1B(
        stage, B // mb,
        loss_fn=lambda logits, labels: F.cross_entropy(
            logits.reshape(-1, V), labels.reshape(-1)))
    if cfg["optimizer"] == "sgd":
        opt = torch.optim.SGD(module.parameters(), lr=cfg["lr"],
                              momentum=cfg["momentum"])
    else:
        opt = torch.optim.AdamW(module.parameters(), lr=cfg["lr"],
                                betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.0)
    g = torch.Generator().manual_seed(0)
    times = []
    for step in range(cfg["steps"]):
        tokens = torch.randint(0, V, (B, S), generator=g)
        labels = torch.randint(0, V, (B, S), generator=g)
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if rank == 0:
            schedule.step(tokens)
        else:
            schedule.step(target=labels)
        opt.step()
        dist.barrier()
        times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print("PEER " + json.dumps(dict(times_ms=times,
                                        torch=torch.__version__)))
    dist.destroy_process_group()


def jax_peer(cfg):
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    L, H, NH, V, S, B = (cfg[k] for k in ("layers", "hidden", "heads", "vocab",
                                          "seq", "batch"))
    D = H // NH
    eps = 1e-5
    devices = jax.devices()[: cfg["devices"]]
    mesh = Mesh(devices, ("tp",))
    dims = cfg["param_dims"]  # cleave name -> [axes or None per dim]

    key = jax.random.PRNGKey(0)
    params = {}
    for name, shape in cfg["param_shapes"].items():
        key, sub = jax.random.split(key)
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or \
                name == "ln_f.weight":
            params[name] = jnp.ones(shape, jnp.float32)
        elif len(shape) == 1:
            params[name] = jnp.zeros(shape, jnp.float32)
        else:
            params[name] = 0.02 * jax.random.normal(sub, shape, jnp.float32)

    def spec(name):
        return NamedSharding(mesh, P(*[("tp" if "tp" in d else None)
                                       for d in dims[name]]))

    pshard = {n: spec(n) for n in params}
    params = {n: jax.device_put(p, pshard[n]) for n, p in params.items()}
    repl = NamedSharding(mesh, P())

    def ln(x, w, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + eps) * w + b

    def gelu(x):
        return 0.5 * x * (1 + jnp.tanh(0.7978845608028654 *
                                       (x + 0.044715 * x ** 3)))

    mask = jnp.tril(jnp.ones((S, S), bool))

    def loss_fn(p, tokens, labels):
        x = p["wte.weight"][tokens] + p["wpe.weight"][:S]
        bsz = tokens.shape[0]
        for i in range(L):
            pre = "h.%d." % i

            def lin(t, n):
                return t @ p[pre + n + ".weight"] + p[pre + n + ".bias"]

            h = ln(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])

            def heads(t):
                return t.reshape(bsz, S, NH, D).transpose(0, 2, 1, 3)

            q = heads(lin(h, "attn.q_proj"))
            k = heads(lin(h, "attn.k_proj"))
            v = heads(lin(h, "attn.v_proj"))
            s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / D ** 0.5)
            s = jnp.where(mask, s, -jnp.inf)
            a = jax.nn.softmax(s, axis=-1) @ v
            a = a.transpose(0, 2, 1, 3).reshape(bsz, S, H)
            x = x + lin(a, "attn.o_proj")
            h = ln(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
            x = x + lin(gelu(lin(h, "mlp.fc")), "mlp.proj")
        x = ln(x, p["ln_f.weight"], p["ln_f.bias"])
        logits = x @ p["wte.weight"].T
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, labels[..., None], -1).mean()

    lr, b1, b2, e = cfg["lr"], 0.9, 0.999, 1e-8
    sgd = cfg["optimizer"] == "sgd"
    mb = cfg["microbatch"] or B
    n = B // mb

    def train_step(p, m, v, t, tokens, labels):
        if n == 1:
            loss, g = jax.value_and_grad(loss_fn)(p, tokens, labels)
        else:
            def body(carry, xs):
                l, gacc = carry
                li, gi = jax.value_and_grad(loss_fn)(p, *xs)
                return (l + li / n, jax.tree.map(lambda a, b: a + b / n,
                                                  gacc, gi)), None
            zero = jax.tree.map(jnp.zeros_like, p)
            (loss, g), _ = jax.lax.scan(
                body, (0.0, zero), (tokens.reshape(n, mb, S),
                                    labels.reshape(n, mb, S)))
        t = t + 1
        if sgd:
            m = jax.tree.map(lambda m_, g_: cfg["momentum"] * m_ + g_, m, g)
            p = jax.tree.map(lambda p_, m_: p_ - lr * m_, p, m)
            return p, m, v, t, loss
        m = jax.tree.map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = jax.tree.map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree.map(lambda p_, m_, v_: p_ - lr * (m_ / c1) /
                         (jnp.sqrt(v_ / c2) + e), p, m, v)
        return p, m, v, t, loss

    step = jax.jit(train_step,
                   in_shardings=(pshard, pshard, pshard, repl, repl, repl),
                   out_shardings=(pshard, pshard, pshard, repl, repl),
                   donate_argnums=(0, 1, 2))
    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)
    t = jnp.zeros((), jnp.float32)
    rng = jax.random.PRNGKey(1)
    times = []
    # Two untimed steps first: the first compiles, the second recompiles
    # once the step counter and the donated state are committed arrays.
    for i in range(cfg["steps"] + 2):
        rng, a, b = jax.random.split(rng, 3)
        tokens = jax.device_put(jax.random.randint(a, (B, S), 0, V), repl)
        labels = jax.device_put(jax.random.randint(b, (B, S), 0, V), repl)
        jax.block_until_ready((tokens, labels))
        t0 = time.perf_counter()
        params, m, v, t, loss = step(params, m, v, t, tokens, labels)
        jax.block_until_ready((params, loss))
        if i >= 2:
            times.append((time.perf_counter() - t0) * 1e3)
    print("PEER " + json.dumps(dict(times_ms=times, jax=jax.__version__,
                                    devices=[str(d) for d in devices])))


# ---------------------------------------------------------------------------
# Orchestration (standard library only).


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


# Runs a command and prints, on stderr, the largest resident set of any
# process in its tree (Linux's RUSAGE_CHILDREN keeps the maximum over
# every waited-for descendant: mpirun's ranks included).
PEAK_WRAPPER = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:])\n"
    "print('PEAK_RSS_KB %d' % resource.getrusage("
    "resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(r.returncode)\n")


def peak_wrapped(cmd):
    return [sys.executable, "-c", PEAK_WRAPPER] + list(cmd)


def peak_of(stderr):
    m = re.findall(r"PEAK_RSS_KB (\d+)", stderr or "")
    return int(m[-1]) / 1024 if m else 0.0


def run_peak(cmd, env=None, timeout=1800):
    """run(), and the peak resident set (MB) of any one of its processes."""
    p = subprocess.run(peak_wrapped(cmd), env=env, capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout, peak_of(p.stderr)


def peer_times(out):
    for line in out.splitlines():
        if line.startswith("PEER "):
            return json.loads(line[5:])
    raise RuntimeError("no PEER line in:\n" + out[-3000:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def blas_kernels(args, env, work):
    """The OpenBLAS kernels cleave's ranks will run, choosing them first
    (`cleave profile`) where this machine has no choice yet."""
    worker = os.path.join(os.path.dirname(os.path.dirname(args.cleave)),
                          "cleave-worker", "cleave-worker")

    def info():
        out = run([worker, "--blas-info"], env=env)
        return dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)

    if args.no_blas_choice:
        env["CLEAVE_BLAS_CORETYPE"] = "default"
        return "%s (OpenBLAS's own pick, --no-blas-choice)" % info()["loaded"]
    if info()["choice"] == "(none)":
        run([args.cleave, "profile", "--backend", "cpu", "--quick", "--ranks",
             "0", "-o", os.path.join(work, "blas.profile")], env=env)
    now = info()
    return "%s (chosen by cleave profile: %s)" % (now["loaded"], now["choice"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="python of the venv with torch and jax")
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--optimizer", default="adamw", choices=["adamw", "sgd"])
    ap.add_argument("--threads", type=int, default=1, help="threads a rank")
    ap.add_argument("--cores", type=int,
                    help="instead of --threads: each configuration's ranks "
                         "share this many cores (1 rank x 2 threads, 2 ranks "
                         "x 1 thread for --cores 2), so one run covers both")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--only", help="comma-separated: 1rank,1rank-compile,"
                    "dp2,tp2,pp2")
    ap.add_argument("--wait-idle", type=float, default=120,
                    help="seconds to wait for an idle machine before each "
                         "measurement")
    ap.add_argument("--max-load", type=float, default=0.2,
                    help="rerun a measurement while other processes used "
                         "more cores than this")
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds per configuration, cleave and the peer "
                         "alternating (the order rotated each round); the "
                         "ratio is paired within a round")
    ap.add_argument("--trace-dir", help="also write cleave run --trace files "
                    "here and print the top ops of each")
    ap.add_argument("--compare-fusion", action="store_true",
                    help="also time cleave run --no-fuse")
    ap.add_argument("--no-blas-choice", action="store_true",
                    help="run OpenBLAS's own kernels, not the ones cleave "
                         "profile chose for this machine")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--peer-config", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        return peer_main(args)
    if not args.python and not args.compare_fusion:
        ap.error("--python (the venv with torch and jax) is required")

    model = "zoo:gpt,layers=%d,hidden=%d,heads=%d,seq=%d,vocab=%d" % (
        args.layers, args.hidden, args.heads, args.seq, args.vocab)
    work = tempfile.mkdtemp(prefix="cleave-speed-")
    env = dict(os.environ)
    T = str(args.threads)
    env.update(OPENBLAS_NUM_THREADS=T, OMP_NUM_THREADS=T, MKL_NUM_THREADS=T)
    blas = blas_kernels(args, env, work)
    print("cleave's OpenBLAS kernels: %s" % blas, flush=True)
    configs = [
        # name, ranks, cleave --fix, peer
        ("1rank", 1, "dp=1,microbatch=%d" % args.batch, "torch"),
        ("1rank-compile", 1, "dp=1,microbatch=%d" % args.batch, "compile"),
        ("dp2", 2, "dp=2,microbatch=%d" % (args.batch // 2), "ddp"),
        ("tp2", 2, "tp=2,microbatch=%d" % args.batch, "jax"),
        # The head untied in both: torch.distributed.pipelining keeps a
        # stage's parameters its own.
        ("pp2", 2, "pp=2,microbatch=%d" % max(1, args.batch // 4), "pipe"),
    ]
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c[0] in keep]

    base = dict(layers=args.layers, hidden=args.hidden, heads=args.heads,
                vocab=args.vocab, seq=args.seq, batch=args.batch,
                optimizer=args.optimizer, threads=args.threads,
                steps=args.steps, lr=1e-3, momentum=0.9, microbatch=0)
    rows = []
    for name, ranks, fix, peer in configs:
        threads = max(1, args.cores // ranks) if args.cores else args.threads
        env.update(OPENBLAS_NUM_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        plan = os.path.join(work, name + ".cleave")
        tied = peer != "pipe"
        run([args.cleave, "compile", model + ("" if tied else ",tied=false"),
             "--cluster",
             "cpu-local,devices=%d" % ranks, "--global-batch",
             str(args.batch), "--fix", fix, "--optimizer", args.optimizer,
             "-o", plan], env=env)
        info = json.loads(run([args.cleave, "inspect", plan, "--json"]))
        cfg = dict(base, tied=tied, threads=threads)
        cfg["microbatch"] = info["knobs"]["microbatch_size"]
        if cfg["microbatch"] >= args.batch // max(1, info["knobs"]["dp"]):
            cfg["microbatch"] = 0

        # cleave
        cmd = [args.cleave, "run", plan, "--steps", str(args.steps)]

        def cleave_side():
            out, rss = run_peak(cmd, env=env)
            return ([float(m.group(3)) for m in
                     (STEP_RE.match(l.strip()) for l in out.splitlines())
                     if m], rss)

        # With a peer the cleave side is measured in the rounds below.
        (ct, _), lm_c = (([], 0), None) \
            if args.python and not args.compare_fusion \
            else measured(cleave_side, args)
        cleave_ms = statistics.median(ct[args.warmup:]) if ct else None
        unfused_ms = None
        if args.compare_fusion:
            fused_cmd = cmd
            cmd = cmd + ["--no-fuse"]
            (ut, _), _ = measured(cleave_side, args)
            cmd = fused_cmd
            unfused_ms = statistics.median(ut[args.warmup:])
            print("  %-6s cleave fused %8.1f ms  --no-fuse %8.1f ms  "
                  "fused/unfused %.2f" % (name, cleave_ms, unfused_ms,
                                          cleave_ms / unfused_ms), flush=True)
        if not args.python:
            rows.append(dict(config=name, fix=fix, cleave_ms=cleave_ms,
                             unfused_ms=unfused_ms, peer=None))
            continue

        # peer
        penv = dict(env)
        me = os.path.abspath(__file__)
        if peer == "jax":
            cfg["devices"] = ranks
            cfg["param_dims"] = {p["name"]: p["dims"]
                                 for p in info["parameters"]}
            cfg["param_shapes"] = {p["name"]: p["global_shape"]
                                   for p in info["parameters"]}
            penv["XLA_FLAGS"] = (
                "--xla_force_host_platform_device_count=%d "
                "--xla_cpu_multi_thread_eigen=false "
                "intra_op_parallelism_threads=%d" % (ranks, threads))
            penv["JAX_PLATFORMS"] = "cpu"
        pcmd = [args.python, me, "--peer", peer, "--peer-config",
                json.dumps(cfg)]
        def peer_side():
            if peer in ("ddp", "pipe"):
                port = str(free_port())
                procs = []
                for r in range(ranks):
                    e = dict(penv, RANK=str(r), WORLD_SIZE=str(ranks),
                             LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                             MASTER_PORT=port)
                    procs.append(subprocess.Popen(
                        peak_wrapped(pcmd), env=e, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True))
                outs = [p.communicate(timeout=1800) for p in procs]
                for p, (o, er) in zip(procs, outs):
                    if p.returncode:
                        raise RuntimeError("%s peer failed:\n%s%s"
                                           % (peer, o, er))
                pout = outs[0][0]
                rss = max(peak_of(er) for _, er in outs)
            else:
                pout, rss = run_peak(pcmd, env=penv)
            return dict(peer_times(pout), peak_rss_mb=rss)

        # Rounds: cleave and the peer one after the other, the order
        # rotated each round, so that a slow spell of the machine falls on
        # both sides of some rounds; the ratio is paired within a round.
        rounds = []
        pinfo = {}
        for r in range(max(1, args.rounds)):
            sides = {}
            for side in (("cleave", "peer") if r % 2 == 0
                         else ("peer", "cleave")):
                if side == "cleave":
                    (t, rss), lm = measured(cleave_side, args)
                    sides["cleave"] = (statistics.median(t[args.warmup:]),
                                       lm.other_cores, rss)
                else:
                    pinfo, lm = measured(peer_side, args)
                    sides["peer"] = (statistics.median(
                        pinfo["times_ms"][args.warmup:]), lm.other_cores,
                        pinfo["peak_rss_mb"])
            busy = max(sides["cleave"][1], sides["peer"][1])
            rounds.append(dict(cleave_ms=sides["cleave"][0],
                               peer_ms=sides["peer"][0],
                               cleave_rss=sides["cleave"][2],
                               peer_rss=sides["peer"][2],
                               ratio=sides["cleave"][0] / sides["peer"][0],
                               other_cores=busy,
                               busy=busy > args.max_load))
            print("  %-13s round %d: cleave %8.1f ms  peer %8.1f ms  ratio "
                  "%.2f  other load %.2f cores%s" % (
                      name, r + 1, sides["cleave"][0], sides["peer"][0],
                      rounds[-1]["ratio"], busy,
                      "  (busy)" if rounds[-1]["busy"] else ""), flush=True)
        label = {"torch": "PyTorch %s" % pinfo.get("torch", ""),
                 "compile": "torch.compile %s" % pinfo.get("torch", ""),
                 "ddp": "torch DDP gloo %s" % pinfo.get("torch", ""),
                 "jax": "JAX %s, %d devices" % (pinfo.get("jax", ""),
                                                ranks),
                 "pipe": "torch pipelining 1F1B %s" % pinfo.get("torch", "")
                 }[peer]
        quiet = [x for x in rounds if not x["busy"]]
        rows.append(dict(config=name, ranks=ranks, fix=fix, peer=label,
                         threads=threads,
                         unfused_ms=unfused_ms, rounds=rounds,
                         refused=len(quiet) * 2 <= len(rounds) and
                         len(rounds) > 1 or not quiet,
                         other_cores=max(x["other_cores"] for x in rounds)))

        if args.trace_dir:
            os.makedirs(args.trace_dir, exist_ok=True)
            tr = os.path.join(args.trace_dir, name + ".json")
            run([args.cleave, "run", plan, "--steps", "3", "--trace", tr],
                env=env)
            print_trace_top(tr, name)

    print()
    print("model %s, global batch %d, %s, %s, median of steps %d-%d" % (
        model, args.batch, args.optimizer,
        ("%d cores shared by each configuration's ranks" % args.cores
         if args.cores else "%d thread(s) a rank" % args.threads),
        args.warmup + 1, args.steps))
    if args.compare_fusion:
        print("%-7s %-28s %12s %14s %14s" % ("config", "cleave plan",
                                             "fused ms", "--no-fuse ms",
                                             "fused/unfused"))
        print("-" * 80)
        for r in rows:
            print("%-7s %-28s %12.1f %14.1f %14.2f" % (
                r["config"], r["fix"], r["cleave_ms"], r["unfused_ms"],
                r["cleave_ms"] / r["unfused_ms"]))
        print("-" * 80)
    if not args.python:
        return
    print("%-18s %-22s %17s %17s %-22s %13s %s" % (
        "config", "cleave plan", "cleave ms min/med", "peer ms min/med",
        "peer", "peak MB c/p", "paired ratios (median)"))
    print("-" * 138)
    refused = []
    for r in rows:
        if r["refused"]:
            refused.append(r)
            print("%-18s %-22s not reported: other processes used up to "
                  "%.2f cores in most rounds (limit --max-load %.2f)" % (
                      r["config"], r["fix"], r["other_cores"], args.max_load))
            continue
        quiet = [x for x in r["rounds"] if not x["busy"]]
        cm = [x["cleave_ms"] for x in quiet]
        pm = [x["peer_ms"] for x in quiet]
        ratios = [x["ratio"] for x in quiet]
        peaks = "%6.0f/%-6.0f" % (max(x["cleave_rss"] for x in quiet),
                                  max(x["peer_rss"] for x in quiet))
        print("%-18s %-22s %8.1f/%8.1f %8.1f/%8.1f %-22s %13s %s (%.2f)" % (
            "%s %dx%d" % (r["config"], r["ranks"], r["threads"]), r["fix"], min(cm), statistics.median(cm), min(pm),
            statistics.median(pm), r["peer"][:22], peaks,
            " ".join("%.2f" % x for x in ratios),
            statistics.median(ratios)))
    print("-" * 138)
    print("ratio = cleave ms / peer ms within a round (above 1: cleave is "
          "slower); rounds where other processes used more than %.2f cores "
          "are left out" % args.max_load)
    print("peak MB c/p = the largest resident set of any one process (a "
          "rank) over the run, cleave's and the peer's")
    if refused:
        sys.exit("the machine was busy: %d configuration(s) not reported"
                 % len(refused))


def measured(fn, args):
    """fn() after waiting for an idle machine; reruns it (up to --retries
    times) while other processes used more than --max-load cores, and keeps
    the least disturbed result. Returns (result, LoadMeter)."""
    best = None
    for _ in range(args.retries + 1):
        wait_idle(args.wait_idle)
        with LoadMeter() as lm:
            result = fn()
        if best is None or lm.other_cores < best[1].other_cores:
            best = (result, lm)
        if lm.other_cores <= args.max_load:
            break
    return best


def print_trace_top(path, name, top=12):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    per = {}
    phases = {}
    pids = set()
    for ev in events:
        if ev.get("ph") != "X":
            continue
        pids.add(ev.get("pid"))
        key = ev.get("name", "?")
        if "." not in key and "+" not in key:  # segment spans
            phases[key] = phases.get(key, 0.0) + ev.get("dur", 0.0)
            continue
        t, c = per.get(key, (0.0, 0))
        per[key] = (t + ev.get("dur", 0.0), c + 1)
    total = sum(t for t, _ in per.values()) or 1.0
    print("    %s trace: %d ranks, 3 steps; phases: %s" % (
        name, len(pids), ", ".join("%s %.0f ms" % (k, v / 1e3)
                                   for k, v in sorted(phases.items()))))
    print("    top instructions by total time (all ranks, all steps):")
    for k, (t, c) in sorted(per.items(), key=lambda kv: -kv[1][0])[:top]:
        print("      %-34s %9.1f ms %6.1f%%  x%d" % (k[:34], t / 1e3,
                                                   100 * t / total, c))


if __name__ == "__main__":
    main()

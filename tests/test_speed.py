"""engine.Speed: how the engines run, never what they compute. On a CPU the sequential engine trains bit-identically to
torch.optim.SGD with clip_grad_norm_ (its readable form, written here); one_forward (one forward of the fix and mix
batches) equals two forwards to float rounding; each switch is also checked on its own against its reference
(torch.optim.SGD, the per-batch sBN loop, two forwards). The CUDA-only paths (graphs, bf16) are tested on a GPU."""
import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from float_bound import assert_near, longest_sum, rtol
from semifl_core import sbn
from semifl_core.config import ConfigError, profile
from semifl_core.data import synthetic
from semifl_core.engine import SequentialEngine, Speed, VectorizedEngine, model_inputs, module_net
from semifl_core.sgd import FlatModels, clip_grads_, sgd_
from semifl_core.methods import semifl
from semifl_core.models import SmallCNN, WideResNet, make_model
from semifl_core.run import Experiment
from semifl_core.tasks import make_tasks

DATA = synthetic()
EXACT = dataclasses.replace(Speed.default("cpu"), one_forward=False)   # the CPU default's bit-identical switches
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="CUDA graphs and bf16 run on a CUDA GPU only; this machine has none")
LOSSES = {"fix-mix": (semifl.client_loss, dict(view="strong", mix_alpha=0.75)),
          "fixmatch": (semifl.fixmatch_loss(0.3), dict(view="strong", weak_too=True)),
          "sup": (semifl.supervised_loss, dict())}


def _tasks(kind, sizes, cfg, device="cpu", data=DATA):
    """Tasks of clients with these many samples (23: a partial last batch; 7: one partial step only)."""
    rng, g = np.random.default_rng(0), torch.Generator(device).manual_seed(0)
    specs, start = [], 0
    for n in sizes:
        x, y = data.x_train[start:start + n].to(device), data.y_train[start:start + n].to(device)
        spec = {"x": x, "y": y}
        if kind == "fix-mix":
            mix = torch.as_tensor(rng.integers(0, n, size=n), device=device)
            spec.update(x_mix=x[mix], y_mix=y[mix])
        specs.append(spec)
        start += n
    loss_fn, views = LOSSES[kind]
    return make_tasks(specs, cfg.client_batch, cfg.local_epochs, rng, g, flip=True, **views), loss_fn


def _states(model, n):
    """Some clients arrive with SGD momentum from an earlier round, some without."""
    gen = torch.Generator().manual_seed(1)
    return [({k: 0.01 * torch.randn(v.shape, generator=gen).to(v.device) for k, v in model.named_parameters()}
             if i % 2 == 0 else None) for i in range(n)]


def _train(engine, speed, kind, sizes=(23, 30, 7, 18), device="cpu", **cfg_kw):
    cfg = profile("smoke", local_epochs=2.0, **cfg_kw)
    torch.manual_seed(0)
    model = make_model(cfg, 3).to(device)
    tasks, loss_fn = _tasks(kind, sizes, cfg, device)
    losses = [] if engine is SequentialEngine else None
    out = engine(cfg, DATA.mean, DATA.std, speed).train(model, tasks, loss_fn, 0.05, _states(model, len(sizes)),
                                                        *([losses] if losses is not None else []))
    return (*out, losses)


def _assert_trained_alike(got, ref, sizes, epochs: int = 2):
    """Weights, momentum and per-model stats of two train calls (_train: E=2, batch 10) equal up to float rounding: the
    bound of tests/float_bound.py over the most steps a client takes."""
    tol = rtol(epochs * -(-max(sizes) // 10), longest_sum(10, DATA.shape))
    for i in range(len(sizes)):
        assert_near({k: v[i] for k, v in got[0].items()}, {k: v[i] for k, v in ref[0].items()}, tol, f"model {i}")
    for i, (a, b) in enumerate(zip(ref[1], got[1])):
        assert_near(b, a, tol, f"model {i}'s momentum")
    assert_near(got[2], ref[2], tol, "loss and aux sums")


# ---------------------------------------------------------------------- the switches themselves
def test_baseline_is_all_off_and_default_turns_on_what_keeps_results():
    assert not any(dataclasses.asdict(Speed.baseline()).values())
    cpu = Speed.default("cpu")
    assert cpu.one_forward and Speed.default("cuda").one_forward    # equal to float rounding (tests below)
    assert not cpu.cuda_graphs and not cpu.sbn_one_pass and not cpu.bf16
    gpu = Speed.default(torch.device("cuda"))
    assert gpu.cuda_graphs and gpu.sbn_one_pass and not gpu.bf16    # fp32 stays the default
    assert gpu.masked_steps and not cpu.masked_steps and not gpu.compile   # as measured on an H200 (BENCHMARKS.md)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpu.cuda_graphs = True


@pytest.mark.parametrize("speed", [Speed(cuda_graphs=True), Speed(cuda_graphs=True, masked_steps=True)])
def test_switches_this_device_cannot_run_are_refused_in_one_line(speed):
    field = "cuda_graphs"
    if CUDA:
        pytest.skip("this machine's GPU runs the switch: allowed here")
    with pytest.raises(ConfigError) as err:
        speed.check("cuda" if CUDA else "cpu")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{field}=True") and "allowed" in msg


def test_a_run_refuses_bf16_because_it_changes_results(tmp_path):
    from semifl_core.run import run
    with pytest.raises(ConfigError, match=r"^bf16=True: .*allowed in a run: False"):
        run(profile("smoke", rounds=1), tmp_path, device="cpu", progress=False, speed=Speed(bf16=True))
    assert not any(tmp_path.iterdir())                              # refused before anything is written


def test_precision_is_a_run_option_in_the_run_key_and_reaches_the_engines(tmp_path, monkeypatch):
    """precision='bf16' changes results: a run key of its own (fp32's keys stay as they were), the engines get bf16."""
    from semifl_core import run as run_mod
    cfg = profile("smoke", rounds=1, threshold=0.0)
    assert cfg.replace(precision="fp32").key() == cfg.key() != cfg.replace(precision="bf16").key()
    seen = []
    monkeypatch.setattr(run_mod, "make_engine", lambda cfg, mean, std, dev, speed, real=run_mod.make_engine: (
        seen.append(speed.bf16), real(cfg, mean, std, dev, speed))[1])
    rows = [pd.read_csv(f"{run_mod.run(c, tmp_path / c.precision, device='cpu', progress=False, data=DATA)['path']}"
                        "/metrics.csv") for c in (cfg, cfg.replace(precision="bf16"))]
    assert seen == [False, True] and rows[0].client_loss[0] != rows[1].client_loss[0]
    assert abs(rows[1].client_loss[0] / rows[0].client_loss[0] - 1) < 0.05  # bfloat16's 8-bit mantissa, not another run


def test_bad_precision_is_one_line():
    with pytest.raises(ConfigError, match=r"^precision='fp16': allowed are fp32, bf16"):
        profile("smoke", precision="fp16")


def test_speed_is_not_part_of_the_config_or_its_run_key():
    cfg = profile("smoke")
    assert not {f.name for f in dataclasses.fields(Speed)} & set(cfg.to_dict())


# ---------------------------------------------------------------------- bit-identical on a CPU
def _torch_optim(kind, sizes=(23, 30, 7, 18)):
    """_train's sequential training written with torch.optim.SGD and clip_grad_norm_: per task the start weights and
    the task's momentum, then every step's loss backward, clipped, stepped. (weights, momentum, stats, losses) as
    the engine returns them."""
    cfg = profile("smoke", local_epochs=2.0)
    torch.manual_seed(0)
    model = make_model(cfg, 3)
    tasks, loss_fn = _tasks(kind, sizes, cfg)
    states = _states(model, len(sizes))
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    params = dict(model.named_parameters())
    mean, std = (torch.as_tensor(v, dtype=torch.float32) for v in (DATA.mean, DATA.std))
    weights, momenta, stats, losses = {k: [] for k in params}, [], [], []
    for task, state in zip(tasks, states):
        model.load_state_dict(start)
        f = module_net(model, EXACT, {k: start[k].clone() for k in params})
        opt = torch.optim.SGD(params.values(), lr=0.05, momentum=cfg.momentum, weight_decay=cfg.weight_decay,
                              nesterov=cfg.nesterov)
        if state is not None:
            for k, p in params.items():
                opt.state[p]["momentum_buffer"] = state[k].clone()
        total = 0
        for s in range(task.steps):
            loss, aux = loss_fn(f, model_inputs(task.batch(s, int(task.size[s])), mean, std))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params.values(), cfg.clip_norm)
            opt.step()
            total = total + torch.cat([loss.detach()[None], aux])
            losses.append(loss.item())
        for k, p in params.items():
            weights[k].append(p.detach().clone())
        momenta.append({k: opt.state[p]["momentum_buffer"] for k, p in params.items()})
        stats.append(total)
    return {k: torch.stack(v) for k, v in weights.items()}, momenta, torch.stack(stats), losses


@pytest.mark.parametrize("kind", ["fix-mix", "fixmatch"])
def test_sequential_engine_trains_bit_identically_to_torch_optim_sgd_on_a_cpu(kind):
    """Different step counts, partial batches, clients that run out of steps, momentum from a state or none: the
    engine's foreach SGD, its device-side sums and its losses read once equal the plain torch.optim loop bit for
    bit."""
    ref, got = _torch_optim(kind), _train(SequentialEngine, EXACT, kind)
    assert profile("smoke").clip_norm > 0
    for k in ref[0]:
        assert torch.equal(ref[0][k], got[0][k]), k
    for a, b in zip(ref[1], got[1]):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(ref[2], got[2]) and ref[3] == got[3]
    start = dict(make_model(profile("smoke"), 3).named_parameters())
    assert not torch.equal(got[0]["fc.weight"][0], start["fc.weight"].detach())   # it trained


# ---------------------------------------------------------------------- one forward a client step
@pytest.mark.parametrize("engine,masked", [(SequentialEngine, False), (VectorizedEngine, False),
                                           (VectorizedEngine, True)])
def test_one_forward_trains_as_two_forwards(engine, masked):
    """SemiFL's fix and mix batches in one forward whose static BN takes each batch's statistics apart (Net.parts)
    train as the authors' two forwards, to the float bound: both engines, and the vectorized engine's padded steps
    (masked_steps: a padded part normalised over its real samples). Per-step statistics over the 20 images together
    (the wrong one forward) would not: checked against the same bound."""
    two = dataclasses.replace(EXACT, one_forward=False, masked_steps=masked)
    got = _train(engine, dataclasses.replace(two, one_forward=True), "fix-mix")
    _assert_trained_alike(got, _train(engine, two, "fix-mix"), (23, 30, 7, 18))
    from semifl_core import models
    right = models.part_batch_norm

    def together(x, parts, valid, *args):   # one set of statistics over all the parts
        return right(x, 1, None if valid is None else valid.repeat(parts), *args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models, "part_batch_norm", together)
        wrong = _train(engine, dataclasses.replace(two, one_forward=True), "fix-mix")
    with pytest.raises(AssertionError):
        _assert_trained_alike(wrong, got, (23, 30, 7, 18))


# ---------------------------------------------------------------------- one optimizer kernel set per step
@pytest.mark.parametrize("nesterov,weight_decay,clip", [(True, 5e-4, 1.0), (False, 0.0, 0.5), (True, 0.1, 0.0)])
def test_foreach_sgd_equals_torch_optim_sgd_with_clipping_bit_for_bit(nesterov, weight_decay, clip):
    cfg = profile("smoke", momentum=0.9, nesterov=nesterov, weight_decay=weight_decay, clip_norm=clip)
    gen = torch.Generator().manual_seed(0)
    shapes = [(16, 3, 3, 3), (16,), (10, 64), (10,)]
    ref = [torch.randn(s, generator=gen).requires_grad_() for s in shapes]
    ours = [p.detach().clone() for p in ref]
    bufs = [torch.zeros_like(p) for p in ours]                       # no momentum yet: torch.optim clones d
    opt = torch.optim.SGD(ref, lr=0.07, momentum=0.9, weight_decay=weight_decay, nesterov=nesterov)
    for _ in range(5):
        grads = [3 * torch.randn(s, generator=gen) for s in shapes]  # norms above the clip
        for p, g in zip(ref, grads):
            p.grad = g.clone()
        if clip:
            torch.nn.utils.clip_grad_norm_(ref, clip)
            clip_grads_(grads, clip)
        opt.step()
        sgd_(ours, grads, bufs, 0.07, cfg)
    for p, q, b in zip(ref, ours, bufs):
        assert torch.equal(p.detach(), q)
        assert torch.equal(opt.state[p]["momentum_buffer"], b)


def test_flat_sgd_of_many_models_equals_torch_optim_sgd_to_float_rounding():
    """FlatModels (the vectorized engine's) against one torch.optim.SGD + clip_grad_norm_ per model. It writes the
    update out (weight decay and the lr step as a product, then a sum: two roundings where torch's fused add has
    one), so they agree to float rounding: 6 steps whose longest sum is the clipping norm's over every parameter
    (tests/float_bound.py)."""
    cfg = profile("smoke", momentum=0.9, nesterov=True, weight_decay=5e-4, clip_norm=1.0)
    gen = torch.Generator().manual_seed(0)
    shapes = {"w": (16, 3, 3, 3), "b": (16,), "fc": (10, 64)}
    start = {k: torch.randn(s, generator=gen) for k, s in shapes.items()}
    states = [None, {k: 0.1 * torch.randn(s, generator=gen) for k, s in shapes.items()}, None]
    flat = FlatModels(start, states, cfg, lr=0.05)
    refs = []
    for s in states:
        ps = [start[k].clone().requires_grad_() for k in shapes]
        opt = torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
        if s is not None:
            for p, k in zip(ps, shapes):
                opt.state[p]["momentum_buffer"] = s[k].clone()
        refs.append((ps, opt))
    active = torch.tensor([True, False, True])
    for step in range(6):
        grads = {k: 2 * torch.randn(3, *s, generator=gen) for k, s in shapes.items()}
        masked = step % 2 == 1                                       # model 1 sits out every other step
        rows = torch.tensor([0, 2]) if masked else None
        flat.step({k: g[rows] for k, g in grads.items()} if masked else grads, rows, active if masked else None)
        for i, (ps, opt) in enumerate(refs):
            if masked and i == 1:
                continue
            for p, k in zip(ps, shapes):
                p.grad = grads[k][i].clone()
            torch.nn.utils.clip_grad_norm_(ps, 1.0)
            opt.step()
    tol = rtol(6, sum(v.numel() for v in start.values()))
    for i, (ps, opt) in enumerate(refs):
        assert_near({k: flat.params[k][i] for k in shapes}, {k: p.detach() for p, k in zip(ps, shapes)}, tol,
                    f"model {i}")
        assert_near({k: flat.views(flat.m)[k][i] for k in shapes},
                    {k: opt.state[p]["momentum_buffer"] for p, k in zip(ps, shapes)}, tol, f"model {i}'s momentum")
    assert not torch.equal(flat.params["w"][1], start["w"])          # the masked model moved on its own steps


# ---------------------------------------------------------------------- sBN statistics in one pass
@pytest.mark.parametrize("make", [lambda: SmallCNN(3, 10, widths=(8, 16, 32)),
                                  lambda: WideResNet(3, 10, depth=10, widen=1)])
def test_sbn_statistics_in_one_pass_equal_the_per_batch_loop(make, monkeypatch):
    """The mean over groups of 250 of each group's mean and unbiased variance, every layer's input normalised group
    by group: 5 whole groups in forwards of 2 groups (monkeypatched from 20) and a last partial group of 37.
    Equal to float rounding (tests/float_bound.py): each layer's statistics sum over 250 x 16 x 16 values of a group,
    and a layer's statistics depend on every layer before it."""
    monkeypatch.setattr(sbn, "ONE_PASS_IMAGES", 500)
    torch.manual_seed(0)
    model = make()
    images = torch.cat([DATA.x_train[:1287]])
    loop, one = make(), make()
    loop.load_state_dict(model.state_dict())
    one.load_state_dict(model.state_dict())
    sbn.compute_statistics(loop, images, DATA.mean, DATA.std)
    sbn.compute_statistics(one, images, DATA.mean, DATA.std, one_pass=True)
    layers = [k for k in loop.state_dict() if k.endswith((".mean", ".var"))]
    assert len(layers) >= 6
    tol = rtol(len(layers) // 2, longest_sum(250, DATA.shape))
    stats = lambda m: {k: m.state_dict()[k] for k in layers}  # noqa: E731
    assert_near(stats(one), stats(loop), tol, "sBN statistics")
    # and not the statistics of forwards of 500 normalised as one batch (what a plain larger batch would give)
    wrong = make()
    wrong.load_state_dict(model.state_dict())
    sbn.compute_statistics(wrong, images, DATA.mean, DATA.std, batch_size=500)
    with pytest.raises(AssertionError):
        assert_near(stats(wrong), stats(loop), tol, "sBN statistics of a batch of 500")
    assert one.training and all(m.record is None and m.group is None for m in one.modules() if hasattr(m, "group"))


def test_sbn_statistics_in_one_pass_keep_the_unbiased_variance_of_small_groups(monkeypatch):
    """Groups of 2 images of 4x4: the last layer sees 2 values per channel in a group, where the unbiased variance is
    twice the biased one, so a one-pass path that recorded the biased one is far outside the (small) bound; the test
    above, at 250 images of 16x16, cannot see that factor (1 + 1/64,000 is inside float32's rounding of such sums)."""
    monkeypatch.setattr(sbn, "ONE_PASS_IMAGES", 6)
    torch.manual_seed(0)
    model = SmallCNN(3, 10, widths=(8, 16, 32))
    images = DATA.x_train[:10, :, :4, :4].contiguous()
    loop, one = SmallCNN(3, 10, widths=(8, 16, 32)), SmallCNN(3, 10, widths=(8, 16, 32))
    loop.load_state_dict(model.state_dict())
    one.load_state_dict(model.state_dict())
    sbn.compute_statistics(loop, images, DATA.mean, DATA.std, batch_size=2)
    sbn.compute_statistics(one, images, DATA.mean, DATA.std, batch_size=2, one_pass=True)
    layers = [k for k in loop.state_dict() if k.endswith((".mean", ".var"))]
    stats = lambda m: {k: m.state_dict()[k] for k in layers}  # noqa: E731
    assert_near(stats(one), stats(loop), rtol(len(layers) // 2, longest_sum(2, (3, 4, 4))),
                "sBN statistics, groups of 2")


@pytest.mark.parametrize("make", [lambda: SmallCNN(3, 10, widths=(8, 16, 32)),
                                  lambda: WideResNet(3, 10, depth=10, widen=1)])
def test_wide_passes_equal_the_default_passes_and_leave_the_model_as_it_was(make, monkeypatch):
    """Speed.wide_passes: sBN statistics in forwards of WIDE_IMAGES (monkeypatched to 500: 2 groups of 250, then the
    partial group of 37) on a channels_last copy, equal to the per-batch loop to float rounding (as above); the model's
    own tensors keep their memory and layout (a captured step reads them). The evaluation of a run with it gives the
    default's accuracy."""
    monkeypatch.setattr(sbn, "WIDE_IMAGES", 500)
    torch.manual_seed(0)
    loop, wide = make(), make()
    wide.load_state_dict(loop.state_dict())
    where = {k: (v.data_ptr(), v.stride()) for k, v in wide.state_dict().items()}
    sbn.compute_statistics(loop, DATA.x_train[:1287], DATA.mean, DATA.std)
    sbn.compute_statistics(wide, DATA.x_train[:1287], DATA.mean, DATA.std, wide=True)
    layers = [k for k in loop.state_dict() if k.endswith((".mean", ".var"))]
    stats = lambda m: {k: m.state_dict()[k] for k in layers}  # noqa: E731
    assert_near(stats(wide), stats(loop), rtol(len(layers) // 2, longest_sum(250, DATA.shape)), "wide sBN statistics")
    assert {k: (v.data_ptr(), v.stride()) for k, v in wide.state_dict().items()} == where
    assert wide.training and all(m.record is None for m in wide.modules() if hasattr(m, "record"))
    cfg = profile("smoke")
    default = Experiment(cfg, DATA, torch.device("cpu"))
    passes = Experiment(cfg, DATA, torch.device("cpu"), dataclasses.replace(Speed.default("cpu"), wide_passes=True))
    st = default.new_state()
    default.refresh_sbn(st.model)
    acc = default.evaluate(st.model)
    passes.refresh_sbn(st.model)
    assert passes.evaluate(st.model) == acc and 10 < acc < 100


# ---------------------------------------------------------------------- bf16 (CPU autocast stands in for CUDA's)
@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
def test_engines_train_under_bf16(engine):
    """The sequential engine runs the forward under autocast; vmap(grad) fails under autocast, so the vmap step
    casts the weights and images instead. The bf16 kernels run on a CPU as they do on CUDA."""
    fp32 = _train(engine, Speed.default("cpu"), "fix-mix")
    bf16 = _train(engine, dataclasses.replace(Speed.default("cpu"), bf16=True), "fix-mix")
    assert all(v.dtype == torch.float32 for v in bf16[0].values())  # fp32 master weights
    for k in fp32[0]:
        assert torch.isfinite(bf16[0][k]).all()
    # the same training to bfloat16's precision (8 bits of mantissa): losses within 5 %
    torch.testing.assert_close(bf16[2][:, 0], fp32[2][:, 0], rtol=0.05, atol=0.05)
    assert not torch.equal(bf16[2], fp32[2])


# ---------------------------------------------------------------------- the captured steps' logic, eagerly
@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
def test_the_steps_cuda_graphs_capture_train_as_the_eager_ones_on_a_cpu(engine, monkeypatch):
    """What cuda_graphs captures, run eagerly on a CPU: the vectorized engine then trains every client on a full batch
    in one fixed-shape step and masks those that have run out of steps (the eager path trains only the others), the
    sequential one runs its full-batch steps through the same step function. Same training up to float rounding
    (vmap over another number of clients); the capture itself needs CUDA. Weakly augmented images: a strong view's
    constant cutout squares give exact max-pool ties, which rounding can break either way (a gradient then moves to
    another pixel: up to 5e-5 after 8 steps between the engines of main, measured), so this case keeps rounding
    at rounding size."""
    from semifl_core import engine as engine_mod
    calls = []

    class Eager:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, **inputs):
            calls.append(1)
            return self.fn(**inputs)
    monkeypatch.setattr(engine_mod, "CapturedStep", Eager)
    monkeypatch.setattr(Speed, "check", lambda self, device: self)
    sizes = (40, 30, 25, 60)                                        # 8, 6, 6 (2 partial) and 12 steps
    eager = _train(engine, Speed.default("cpu"), "sup", sizes)
    graph = _train(engine, dataclasses.replace(Speed.default("cpu"), cuda_graphs=True), "sup", sizes)
    assert len(calls) >= 9                                          # all but the first and the partial steps
    _assert_trained_alike(graph, eager, sizes)


@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
def test_captured_steps_are_kept_for_the_run_and_train_as_eager_rounds(engine, monkeypatch):
    """Capture once per run: three train calls of one engine (new start weights, momentum and learning rate each, as
    rounds bring) build one step to capture (the graph stood in by an eager call, as above), keep the memory it reads
    and writes (weights, momentum, learning rate), and train as three eager calls do, to float rounding."""
    from semifl_core import engine as engine_mod
    built = []

    class Eager:
        def __init__(self, fn):
            built.append(fn)
            self.fn = fn

        def __call__(self, **inputs):
            return self.fn(**inputs)
    monkeypatch.setattr(engine_mod, "CapturedStep", Eager)
    monkeypatch.setattr(Speed, "check", lambda self, device: self)
    sizes = (40, 30, 25, 60)
    cfg = profile("smoke", local_epochs=2.0)
    tasks, loss_fn = _tasks("sup", sizes, cfg)
    out, kept = {}, []
    for name, speed in (("eager", Speed.default("cpu")),
                        ("graph", dataclasses.replace(Speed.default("cpu"), cuda_graphs=True))):
        torch.manual_seed(0)
        model = make_model(cfg, 3)
        eng = engine(cfg, DATA.mean, DATA.std, speed)
        states, rows = _states(model, len(sizes)), []
        for lr in (0.05, 0.03, 0.01):     # each call starts from the last call's first model, as a round's average
            rows.append(eng.train(model, tasks, loss_fn, lr, states))
            states = rows[-1][1]
            with torch.no_grad():
                for k, p in model.named_parameters():
                    p.copy_(rows[-1][0][k][0])
            if name == "graph":
                steps = next(iter(eng._kept.values()))
                memory = [steps.flat.p, steps.flat.m, steps.flat.lr] if engine is VectorizedEngine else \
                    [*steps.params, *steps.bufs, steps.lr]
                kept.append([t.data_ptr() for t in memory])
                assert float(memory[-1]) == pytest.approx(lr, rel=1e-7)   # float32
        out[name] = rows
    assert len(built) == 1 and len(kept) == 3 and kept[0] == kept[1] == kept[2]
    for call, (graph, eager) in enumerate(zip(out["graph"], out["eager"])):
        tol = rtol((call + 1) * 2 * -(-max(sizes) // 10), longest_sum(10, DATA.shape))   # every step of the calls
        for i in range(len(sizes)):
            assert_near({k: v[i] for k, v in graph[0].items()}, {k: v[i] for k, v in eager[0].items()}, tol,
                        f"call {call}, model {i}")
        assert_near(graph[2], eager[2], tol, f"call {call}, loss sums")


# ---------------------------------------------------------------------- masked (padded) steps and compile
def test_masked_batch_norm_is_batch_norm_over_the_real_samples_whatever_the_padding():
    from semifl_core.models import part_batch_norm
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, 4, 4, generator=gen, requires_grad=True)
    w, b = torch.rand(5, generator=gen).requires_grad_(), torch.randn(5, generator=gen).requires_grad_()
    valid = torch.tensor([True] * 4 + [False] * 3)
    padded = torch.cat([x[:4], 100 * torch.randn(3, 5, 4, 4, generator=gen)])   # padding far off the real samples
    out = part_batch_norm(padded, 1, valid, w, b, 1e-5)
    ref = F.batch_norm(x[:4], None, None, w, b, True, 0.0, 1e-5)
    torch.testing.assert_close(out[:4], ref)
    g_out = torch.autograd.grad((out[:4] ** 2).sum(), (x, w, b))
    g_ref = torch.autograd.grad((ref ** 2).sum(), (x, w, b))
    for a, r in zip(g_out, g_ref):
        torch.testing.assert_close(a, r)
    assert not torch.equal(out[:4], F.batch_norm(padded, None, None, w, b, True, 0.0, 1e-5)[:4])   # unmasked differs


@pytest.mark.parametrize("kind", ["fix-mix", "fixmatch", "sup"])
def test_masked_steps_train_as_the_eager_partial_steps(kind, monkeypatch):
    """Speed.masked_steps: a step where some clients have a partial batch runs as one padded step with a mask of the
    real samples (BN statistics and loss means over those only), and trains as the eager un-padded steps do, up to
    float rounding; the aux counts (fixmatch: seen, right, confident) count the real samples only. Weak views for
    the same reason as the cuda_graphs test above (max-pool ties of cutout squares)."""
    from semifl_core import engine as engine_mod
    masks, original = [], engine_mod.valid_samples

    def spy(mask):
        masks.append(mask is not None)
        return original(mask)
    monkeypatch.setattr(engine_mod, "valid_samples", spy)
    loss_fn, views = LOSSES[kind]
    if kind == "fixmatch":   # a threshold the untrained model's confidence crosses for some samples, not all
        loss_fn = semifl.fixmatch_loss(0.12)
    monkeypatch.setitem(LOSSES, kind, (loss_fn, {**views, "view": "weak"}))
    sizes = (23, 30, 7, 18)          # partial batches at different steps, clients out of steps
    eager = _train(VectorizedEngine, Speed.default("cpu"), kind, sizes)
    assert not any(masks)
    masked = _train(VectorizedEngine, dataclasses.replace(Speed.default("cpu"), masked_steps=True), kind, sizes)
    # 6 steps (batch 10, E=2), partial batches in steps 0-3 and 5: after the first (eager), those 4 ran padded
    assert sum(masks) == 4
    _assert_trained_alike(masked, eager, sizes)
    if kind == "fixmatch":
        assert 0 < eager[2][:, 2].sum() < eager[2][:, 0].sum()   # some samples confident, not all


def test_captured_step_warms_up_and_captures_on_the_same_static_tensors(monkeypatch):
    """What made the compiled step's capture fail on an H200: warm-ups on the caller's (strided) views, the capture on
    contiguous copies, so a compiled fn recompiled inside the capture. Every call of fn must see the same static
    tensors, holding that call's inputs. CUDA's streams and graph are stood in for on the CPU (the fake capture runs
    fn once, the fake replay nothing)."""
    from contextlib import nullcontext

    from semifl_core import engine as engine_mod

    class Fake:
        def __init__(self, *a, **k):
            pass

        def wait_stream(self, other):
            pass

        def replay(self):
            pass
    monkeypatch.setattr(torch.cuda, "Stream", Fake)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: Fake())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Fake)
    monkeypatch.setattr(torch.cuda, "graph", lambda g: nullcontext())
    seen = []

    def fn(x):
        seen.append((x.data_ptr(), x.is_contiguous(), x.clone()))
        return x.sum()
    step = engine_mod.CapturedStep(fn)
    stacked = torch.arange(60.0).view(6, 10)
    for s in range(6):
        step(x=stacked[:, s])                                     # a strided view, as the engine passes
    assert len(seen) == step.WARMUP + 1                           # warm-ups, then one capture; replays run no Python
    assert len({ptr for ptr, _, _ in seen}) == 1 and all(c for _, c, _ in seen)
    for s, (_, _, x) in enumerate(seen):
        assert torch.equal(x, stacked[:, s])
    assert torch.equal(step.static["x"], stacked[:, 5])          # the last call's inputs are what replays read


def test_compiled_full_step_trains_as_the_eager_one_on_a_cpu(monkeypatch):
    """Speed.compile (torch.compile of the vectorized engine's fixed-shape step), with masked steps, on the CPU, where
    it checks the switch's logic: what dynamo captures of the step (its in-place SGD on the stacked weights, the masks
    of padded steps) trains as the eager step does. Compile is a GPU switch, so inductor's code generation is left to
    the CUDA test below (the device call runs it): here the captured graph runs through AOT autograd without inductor
    (backend "aot_eager"), which keeps the test's minute and a half of C++ compilation out of `make test`."""
    compiled, torch_compile = [], torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn: compiled.append(fn) or torch_compile(fn, backend="aot_eager"))
    sizes = (40, 30, 25, 60)
    eager = _train(VectorizedEngine, Speed.default("cpu"), "sup", sizes)
    torch._dynamo.reset()
    fast = _train(VectorizedEngine, dataclasses.replace(Speed.default("cpu"), masked_steps=True, compile=True), "sup",
                  sizes)
    assert compiled, "compile=True left the step uncompiled"
    _assert_trained_alike(fast, eager, sizes)


# ---------------------------------------------------------------------- CUDA
@pytest.fixture
def full_fp32():
    """Convolutions and matrix products in full FP32: cuDNN's default TF32 convolutions round operands to 10 bits of
    mantissa, and which kernel (TF32 or not) runs depends on the shapes, which differ between the vectorized engine's
    masked graph step and its eager steps over fewer clients (an H100, 2026-11-26: weights 2.9e-4 apart after the
    `sup` case's steps with TF32 on)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@needs_cuda
@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
@pytest.mark.parametrize("kind", ["fix-mix", "fixmatch", "sup"])
def test_cuda_graphs_equal_eager_to_float_rounding(engine, kind, full_fp32, monkeypatch):
    """Full, partial and (vectorized) masked steps, in full FP32 (fixture), on weak views (strong views' cutout squares
    make max-pool ties that rounding breaks either way: tests/float_bound.py); a wrong mask or momentum moves weights
    by about lr x gradient (1e-2)."""
    loss_fn, views = LOSSES[kind]
    monkeypatch.setitem(LOSSES, kind, (loss_fn, {**views, "view": "weak"}))
    sizes = (53, 60, 27, 48)
    eager = _train(engine, dataclasses.replace(Speed.default("cuda"), cuda_graphs=False), kind, sizes, device="cuda")
    graph = _train(engine, Speed.default("cuda"), kind, sizes, device="cuda")
    _assert_trained_alike(graph, eager, sizes)
    if eager[3] is not None:   # the sequential engine's per-step losses
        assert_near(torch.tensor(graph[3]), torch.tensor(eager[3]), rtol(12, longest_sum(10, DATA.shape)), "losses")


@needs_cuda
@pytest.mark.parametrize("switches", ["masked_steps", "compile", "masked_steps+compile"])
def test_each_speed_switch_on_cuda_trains_as_eager(switches, full_fp32, monkeypatch):
    """masked_steps and compile, alone and together, with CUDA graphs, against eager unpadded steps, in full FP32 on
    weak views as above; sizes that leave partial batches, so masked_steps pads some steps."""
    loss_fn, views = LOSSES["sup"]
    monkeypatch.setitem(LOSSES, "sup", (loss_fn, {**views, "view": "weak"}))
    sizes = (53, 60, 27, 48)
    plain = dataclasses.replace(Speed.default("cuda"), masked_steps=False, compile=False)
    eager = _train(VectorizedEngine, dataclasses.replace(plain, cuda_graphs=False), "sup", sizes, device="cuda")
    torch._dynamo.reset()
    fast = _train(VectorizedEngine, dataclasses.replace(plain, **{s: True for s in switches.split("+")}), "sup", sizes,
                  device="cuda")
    _assert_trained_alike(fast, eager, sizes)


@needs_cuda
@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
def test_graphs_captured_once_replay_three_rounds_as_eager_on_cuda(engine, full_fp32, monkeypatch):
    """Capture once per run on a GPU: three train calls of one engine (new weights, momentum and learning rate each)
    with real CUDA graphs, captured in the first and replayed in the next two, train as eager calls do."""
    loss_fn, views = LOSSES["sup"]
    monkeypatch.setitem(LOSSES, "sup", (loss_fn, {**views, "view": "weak"}))
    sizes = (53, 60, 27, 48)
    cfg = profile("smoke", local_epochs=2.0)
    tasks, loss_fn = _tasks("sup", sizes, cfg, "cuda")
    out = {}
    for name, speed in (("eager", dataclasses.replace(Speed.default("cuda"), cuda_graphs=False)),
                        ("graph", Speed.default("cuda"))):
        torch.manual_seed(0)
        model = make_model(cfg, 3).cuda()
        eng = engine(cfg, DATA.mean, DATA.std, speed)
        states, rows = _states(model, len(sizes)), []
        for lr in (0.05, 0.03, 0.01):
            rows.append(eng.train(model, tasks, loss_fn, lr, states))
            states = rows[-1][1]
            with torch.no_grad():
                for k, p in model.named_parameters():
                    p.copy_(rows[-1][0][k][0])
        out[name] = rows
    for call, (graph, eager) in enumerate(zip(out["graph"], out["eager"])):
        tol = rtol((call + 1) * 12, longest_sum(10, DATA.shape))
        assert_near({k: v[0] for k, v in graph[0].items()}, {k: v[0] for k, v in eager[0].items()}, tol, f"call {call}")
        assert_near(graph[2], eager[2], tol, f"call {call}, loss sums")


@needs_cuda
@pytest.mark.parametrize("engine", [SequentialEngine, VectorizedEngine])
def test_no_host_synchronisation_grows_with_the_steps(engine):
    """The synchronising calls of a train call do not depend on how many steps it has."""
    def syncs(epochs):
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                _train(engine, Speed.default("cuda"), "fix-mix", device="cuda", local_epochs=epochs)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return sum("synchroniz" in str(w.message) for w in got)
    assert syncs(1.0) == syncs(3.0)


@needs_cuda
def test_bf16_vectorized_engine_on_cuda():
    if not torch.cuda.is_bf16_supported():
        with pytest.raises(ConfigError, match=r"^bf16=True: .*allowed: False"):
            Speed(bf16=True).check("cuda")
        return
    fp32 = _train(VectorizedEngine, Speed.default("cuda"), "fix-mix", device="cuda")
    bf16 = _train(VectorizedEngine, dataclasses.replace(Speed.default("cuda"), bf16=True), "fix-mix", device="cuda")
    torch.testing.assert_close(bf16[2][:, 0], fp32[2][:, 0], rtol=0.05, atol=0.05)


@needs_cuda
def test_default_speed_rounds_on_cuda_match_the_baseline_to_float_rounding():
    cfg = profile("smoke", threshold=0.2, rounds=3, sbn_source="all")
    data = DATA.to(torch.device("cuda"))
    rows = []
    for speed in (Speed.baseline(), Speed.default("cuda")):
        exp = Experiment(cfg, data, torch.device("cuda"), speed)
        st = exp.new_state()
        rows.append(exp.round(st, 0))
    assert rows[0]["clients_trained"] == rows[1]["clients_trained"]
    assert abs(rows[0]["server_loss"] - rows[1]["server_loss"]) < 1e-3
    assert abs(rows[0]["test_acc"] - rows[1]["test_acc"]) <= 100 / 500 * 2

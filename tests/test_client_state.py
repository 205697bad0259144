"""State a SemiFL variant keeps per client (methods/client_state.py), worked on a FedDyn-style variant (Acar et al.,
"Federated Learning Based on Dynamic Regularization", ICLR 2021, Algorithm 1): each client's loss adds
-<h_i, w> + (alpha / 2) ||w - w_global||^2, and after its training h_i <- h_i - alpha (w_i - w_global)."""
import copy
import dataclasses

import pytest
import torch

from semifl_core.config import ConfigError, profile
from semifl_core.data import synthetic
from semifl_core.methods import METHODS, SEMIFL, Field, Method, register
from semifl_core.methods.client_state import KEY, ClientState
from semifl_core.net import graph_safe, inner, sq_distance
from semifl_core.run import Experiment, run
from float_bound import assert_near, longest_sum, rtol
from interrupt import interrupted

DATA = synthetic()


def dyn_loss(cfg, base):
    alpha = cfg.dyn_alpha

    @graph_safe
    def loss(f, b):
        value, counts = base(f, b)
        return value - inner(f.params, f.state) + alpha / 2 * sq_distance(f.params, f.start), counts
    return loss


def zeros(cfg, weights):
    return {k: torch.zeros_like(v) for k, v in weights.items()}


def dyn_update(cfg, h, start, end, ctx):
    return {k: h[k] - cfg.dyn_alpha * (end[k] - start[k]) for k in h}


@pytest.fixture
def dyn():
    register(Method("test-dyn", "Test-Dyn", variant_of=SEMIFL, client_loss=dyn_loss,
                    client_state=ClientState(zeros, dyn_update), fields={"dyn_alpha": Field(0.1)}))
    yield
    METHODS.pop("test-dyn", None)


def _rounds(cfg, n, st=None, start=0):
    exp = Experiment(cfg, DATA, torch.device("cpu"))
    st = st if st is not None else exp.new_state()
    for r in range(start, start + n):
        exp.round(st, r)
    return st


def _weights(st):
    return {k: v.detach() for k, v in st.model.state_dict().items()}


def test_alpha_zero_is_semifl_exactly_and_its_state_stays_zero(dyn):
    plain = _rounds(profile("smoke", rounds=3), 3)
    dyn0 = _rounds(profile("smoke", rounds=3, algorithm="test-dyn", dyn_alpha=0.0), 3)
    for k, v in _weights(plain).items():
        assert torch.equal(_weights(dyn0)[k], v), k
    kept = dyn0.method[KEY]
    assert len(kept) >= 3 and all(not v.any() for h in kept.values() for v in h.values())


def test_the_state_is_read_by_the_loss_updated_after_training_and_grows(dyn):
    cfg = profile("smoke", rounds=4, algorithm="test-dyn", dyn_alpha=0.1)
    st = _rounds(cfg, 1)
    first = copy.deepcopy(st.method[KEY])
    assert len(first) == cfg.num_active and all(any(v.any() for v in h.values()) for h in first.values())
    # the update ran once from the global model the clients received (the model before this round's aggregation is
    # gone; the state is -alpha (w_end - w_start), so w_start - h / alpha is each client's trained model: all differ)
    ends = [torch.cat([v.flatten() for v in h.values()]) for h in first.values()]
    assert all(not torch.equal(a, b) for i, a in enumerate(ends) for b in ends[i + 1:])
    # the loss reads it: the same next round from states set to zero trains other weights
    zeroed = copy.deepcopy(st)
    zeroed.method[KEY] = {c: zeros(cfg, h) for c, h in zeroed.method[KEY].items()}
    a, b = _weights(_rounds(cfg, 1, copy.deepcopy(st), start=1)), _weights(_rounds(cfg, 1, zeroed, start=1))
    assert any(not torch.equal(a[k], b[k]) for k in a)
    _rounds(cfg, 3, st, start=1)
    kept = st.method[KEY]
    assert len(kept) > len(first)   # the clients of later rounds get theirs
    again = [c for c in first if c in kept and not all(torch.equal(kept[c][k], first[c][k]) for k in first[c])]
    assert again, "a client trained in a later round keeps its state and updates it"


def test_both_engines_read_and_update_the_state_alike(dyn):
    """From one state after a round (its h not zero), the next round in each engine: the clients' new states agree to
    the float bound (tests/float_bound.py: one round, a client's steps)."""
    cfg = profile("smoke", rounds=3, algorithm="test-dyn", dyn_alpha=0.1, threshold=0.0)
    st = _rounds(cfg, 1)
    seq = _rounds(cfg, 1, copy.deepcopy(st), start=1)
    vec = _rounds(cfg.replace(engine="vectorized"), 1, copy.deepcopy(st), start=1)
    trained = [c for c in seq.method[KEY] if c not in st.method[KEY] or
               not torch.equal(seq.method[KEY][c]["fc.weight"], st.method[KEY][c]["fc.weight"])]
    assert trained and seq.method[KEY].keys() == vec.method[KEY].keys()
    # h_new = h_old - alpha (w_end - w_start): compare the clients' trained weights the states imply (the bound is
    # relative to the weights; 19 steps of a client's 190 images)
    start = {k: v.detach() for k, v in st.model.named_parameters()}
    tol = rtol(19, longest_sum(cfg.client_batch, DATA.shape))
    for c in trained:
        old = st.method[KEY].get(c) or zeros(cfg, start)
        end = {name: {k: start[k] + (old[k] - s.method[KEY][c][k]) / cfg.dyn_alpha for k in start}
               for name, s in (("seq", seq), ("vec", vec))}
        assert_near(end["vec"], end["seq"], tol, f"client {c}'s trained weights, from its state")


def test_the_state_is_checkpointed_with_the_run(dyn, tmp_path):
    cfg = profile("smoke", rounds=4, algorithm="test-dyn", dyn_alpha=0.1)
    full = run(cfg, tmp_path / "full", device="cpu", progress=False, data=DATA)
    interrupted(cfg, tmp_path / "resumed", after=2, data=DATA)   # killed in round 3, its checkpoint round 2's
    resumed = run(cfg, tmp_path / "resumed", device="cpu", progress=False, data=DATA)
    a = torch.load(f"{full['path']}/model.pt", weights_only=False)["final"]
    b = torch.load(f"{resumed['path']}/model.pt", weights_only=False)["final"]
    assert all(torch.equal(a[k], b[k]) for k in a)   # without the state restored, round 3's losses would differ


@pytest.mark.parametrize("update, said", [
    (lambda cfg, h, start, end, ctx: {k: v[:1] for k, v in h.items()}, "(1, "),
    (lambda cfg, h, start, end, ctx: {"h": torch.zeros(3)}, "returned h (3,)"),
    (lambda cfg, h, start, end, ctx: 1.0, "returned float"),
])
def test_a_hook_returning_other_names_or_shapes_is_one_line(update, said):
    register(Method("test-bad-dyn", "Test-Bad", variant_of=SEMIFL, client_state=ClientState(zeros, update)))
    try:
        with pytest.raises(ConfigError) as err:
            _rounds(profile("smoke", algorithm="test-bad-dyn"), 1)
        line = str(err.value)
        assert "\n" not in line and "method 'test-bad-dyn'" in line and "update" in line and "allowed:" in line
        assert said in line
    finally:
        METHODS.pop("test-bad-dyn", None)


def test_a_loss_reading_a_state_the_method_does_not_keep_is_one_line():
    def reads_h(cfg, base):
        @graph_safe
        def loss(f, b):
            value, counts = base(f, b)
            return value + f.state["h"].sum(), counts
        return loss
    register(Method("test-no-state", "Test-No-State", variant_of=SEMIFL, client_loss=reads_h))
    try:
        with pytest.raises(ConfigError, match=r"^a loss asked for the client state 'h', which this method does not "
                                              r"keep; it keeps none"):
            _rounds(profile("smoke", algorithm="test-no-state"), 1)
    finally:
        METHODS.pop("test-no-state", None)


def test_client_state_belongs_to_a_variant_of_semifl():
    with pytest.raises(ConfigError, match="client_state is for a variant of SemiFL"):
        register(Method("test-own-round", "Own", round=lambda exp, st, rnd: None,
                        client_state=ClientState(zeros, dyn_update)))
    assert "test-own-round" not in METHODS


def test_kept_steps_take_each_calls_states(dyn):
    """The vectorized engine keeps its fixed-shape steps from one call to the next (masked steps; on a GPU, captured
    graphs that read the same memory): a kept step trains with the new call's states, exactly as a fresh one."""
    from semifl_core.engine import Speed
    cfg = profile("smoke", rounds=3, algorithm="test-dyn", dyn_alpha=0.1, engine="vectorized")
    speed = Speed(masked_steps=True, one_forward=True)
    st = _rounds(cfg.replace(engine="sequential"), 1)
    zeroed = copy.deepcopy(st)
    zeroed.method[KEY] = {c: zeros(cfg, h) for c, h in zeroed.method[KEY].items()}
    kept = Experiment(cfg, DATA, torch.device("cpu"), speed)
    again = copy.deepcopy(st)
    kept.round(again, 1)   # its steps kept (for this model), holding st's states
    # the same model and run state back at the end of round 1, the states zeroed: the kept steps train again
    back = copy.deepcopy(zeroed)   # (an optimizer's load_state_dict keeps the tensors it is given)
    again.model.load_state_dict(back.model.state_dict())
    again.global_opt.load_state_dict(back.global_opt.state_dict())
    for f in dataclasses.fields(again):
        if f.name not in ("model", "global_opt"):
            setattr(again, f.name, getattr(back, f.name))
    kept.round(again, 1)
    Experiment(cfg, DATA, torch.device("cpu"), speed).round(zeroed, 1)
    assert all(torch.equal(v, _weights(zeroed)[k]) for k, v in _weights(again).items())

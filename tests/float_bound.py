"""The bound that every test comparing two float paths takes its tolerance from.

Two paths that compute the same values in float32 with their sums in another order differ by rounding only. Such
paths here: another CPU's kernels (AVX-512, AVX2 or the scalar `default`: ATEN_CPU_CAPABILITY), another thread count,
one batched kernel for all clients against one per client (the two engines), a CUDA graph or a compiled step against
the eager one, a padded step with a mask against the unpadded one. How far apart they may be:

1. One sum of n float32 terms. In the worst case it is within gamma_n = n u / (1 - n u) of the exact sum, relative to
   sum |x_i|, u = 2^-24 float32's unit roundoff (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
   Lemma 3.1). That needs every rounding to err the same way. With roundings independent and of mean zero (the model
   of Higham and Mary, "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019,
   Theorem 2.4) it is within gamma~_n = exp(LAMBDA sqrt(n) u + n u^2 / (1 - u)) - 1, about LAMBDA sqrt(n) u, with
   probability at least 1 - 2n exp(-LAMBDA^2 (1 - u)^2 / 2); at LAMBDA = 10 that fails once in 10^16 sums of 10^5
   terms. We use gamma~_n: the worst case is sqrt(n) / LAMBDA times larger (25 times for the longest sums here, 64,000
   terms), as large as the differences a one-line change of a method makes. Two orders: within 2 gamma~_n.
2. A training step's values (activations, loss, gradient, update) are built from sums of at most n terms, n the
   longest reduction of the step (`longest_sum`: a convolution's weight gradient sums over batch x height x width, and
   batch norm's statistics over the same). The step differs between the paths by at most 2 gamma~_n, relative.
3. S dependent steps (one client's local steps, then the server's, in one round; or a network's layers one after the
   other): the steps' differences add, so the paths are within 2 S gamma~_n (`rtol`), normwise: max |got - want| <=
   rtol * max |want| over a whole model (`assert_near`). Relative to the terms, not the result: a sum that cancels
   (a bias's gradient) has no relative bound of its own, elementwise or per tensor.

Step 3 counts each step's difference once, a first-order bound: a difference made at one step also changes the later
steps' gradients. Within one round at these learning rates that growth stays well inside the bound (measured margins
in `MEASURED`: at most a quarter of it). Beyond one round no rounding bound holds: a pseudo-label whose confidence
sits at its threshold is taken by one path and not the other, and training carries that jump on; so these comparisons
stop at one round (or one `train` call). Whole runs of two engines end within seed noise (BENCHMARKS.md). A strong
view's constant cutout squares make exact max-pool ties, which rounding can break either way (the gradient then flows
to another pixel): the comparisons of the captured, masked and compiled steps train on weak views; those of SemiFL's
own client loss, on strong views, stayed as far inside the bound as the others (`MEASURED`). Near-ties do the same
more rarely: a max-pool's or a ReLU's inputs within rounding of each other send the gradient one way in one path and
the other way in the other. That is an event, not a rounding: its chance grows with the steps compared, and where it
happens the paths differ by about lr x one activation's gradient. The fused step's remedy comparisons met it in 3 of
30 (remedy, kernel set, threads) cases at two epochs on strong views; they compare one epoch on weak views.

Not covered: bfloat16 against float32 (Speed.bf16) is not the same computation in another order but a coarser one
(8-bit mantissas); its tests compare losses to 5 %, a benchmark switch that a run refuses.
"""
from __future__ import annotations

import math
import os

import torch

F32_U = 2.0 ** -24
LAMBDA = 10.0
# The largest share of its bound that the suite's comparisons reached (max |got - want| / (rtol * max |want|)), logged
# with FLOAT_BOUND_LOG=<file> on a 2-core AMD EPYC without AVX-512, torch 2.14.1, 2026-11-28, over three whole
# suites: `make test` (ATEN_CPU_CAPABILITY left native = avx2, 2 threads) and ATEN_CPU_CAPABILITY=default at 1 and at
# 2 threads; the largest of the three suites' maxima. Comparisons made inside pytest.raises (a deliberately wrong path
# that must fail: 4.9-5.5 of its bound) are not in it.
MEASURED = {
    "test_run: one round of each engine, the final model": 0.242,
    "test_skew_losses: a distilling round, both engines": 0.017,
    "test_semifl: FedRS's round 0, both engines (the comparison of the AMD report)": 0.013,
    "test_engine: engines with partial batches and unequal step counts": 0.0082,
    "test_speed: one-pass sBN statistics, groups of 2 images": 0.0089,
    "test_models: folded static BN": 0.0020,
    "test_speed: compiled, masked, captured, kept steps and flat SGD, each against eager": 0.0012,
}


def gamma(n: int, u: float = F32_U) -> float:
    """gamma~_n: the probabilistic relative error bound of one sum of n terms (Higham and Mary 2019, LAMBDA = 10)."""
    return math.expm1(LAMBDA * math.sqrt(n) * u + n * u * u / (1 - u))


def rtol(steps: int, n: int, u: float = F32_U) -> float:
    """The normwise relative distance two paths of `steps` dependent steps, each summing at most n terms, may reach."""
    return 2 * max(steps, 1) * gamma(n, u)


def longest_sum(batch: int, image_shape) -> int:
    """The longest reduction of a training step on images of image_shape (C, H, W) in batches of `batch`, for the
    package's models: a weight gradient (and a batch norm's statistics) of a full-resolution convolution sums over
    batch x H x W; the other sums (a convolution's C k k inputs, the classifier's features) are shorter."""
    _, h, w = image_shape
    return batch * h * w


def _flat(x) -> torch.Tensor:
    if isinstance(x, dict):
        return torch.cat([_flat(x[k]) for k in sorted(x)]) if x else torch.zeros(0, dtype=torch.float64)
    return torch.as_tensor(x, dtype=torch.float64).flatten()


def assert_near(got, want, tol: float, what: str = "") -> None:
    """max |got - want| <= tol * max |want|, normwise over everything given: a tensor, an array, or a dict of them (a
    model's weights, compared as one vector: a sum that cancels, such as a bias's gradient, has an error relative to
    its terms, not to its small result, so one small tensor alone has no relative bound)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (what, sorted(got), sorted(want))
    got, want = _flat(got), _flat(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    diff, scale = (got - want).abs().max().item(), want.abs().max().item()
    if os.environ.get("FLOAT_BOUND_LOG"):   # how much of its bound each comparison uses (MEASURED)
        with open(os.environ["FLOAT_BOUND_LOG"], "a") as log:
            log.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?').split(' ')[0]}\t{what}\t"
                      f"{diff / (tol * scale) if scale else 0.0:.3g}\n")
    assert math.isfinite(diff) and (diff <= tol * scale or diff == 0), \
        f"{what}: max |difference| {diff:.3g} > {tol:.3g} x max |value| {scale:.3g} (the bound of tests/float_bound.py)"

"""Batched augmentation: weak = flip + reflect-padded crop, strong = the authors' RandAugment(2, 10), each op
checked against PIL (what the authors' code runs), per-sample randomness, mixup and normalisation."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageEnhance, ImageOps

from semifl_core import augment as A

SEMIFL = dict(A.SEMIFL_POOL)
FIXMATCH = dict(A.FIXMATCH_POOL)


def images(n, c=3, h=32, w=32, seed=0, avoid=None):
    x = torch.randint(0, 256, (n, c, h, w), generator=torch.Generator().manual_seed(seed), dtype=torch.int64)
    if avoid is not None:
        x = torch.where(x == avoid, avoid + 1, x)
    return x.to(torch.uint8)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- weak
def crop_matches(out, x, pad):
    """For each output: the (oy, ox, mirrored) of the reflect-padded crop of its input that it equals, found by
    brute force over every offset in [-pad, pad]^2 (None where there is none)."""
    n, _, h, w = x.shape
    padded = F.pad(x.float(), (pad, pad, pad, pad), mode="reflect").to(torch.uint8)  # edge pixel not repeated
    found = [[] for _ in range(n)]
    for oy in range(-pad, pad + 1):
        for ox in range(-pad, pad + 1):
            crop = padded[:, :, pad + oy:pad + oy + h, pad + ox:pad + ox + w]
            for mirrored, cand in ((False, crop), (True, crop.flip(3))):
                hit = (out == cand).flatten(1).all(1)
                for i in torch.nonzero(hit).flatten().tolist():
                    found[i].append((oy, ox, mirrored))
    return found


@pytest.mark.parametrize("c, h, flip", [(3, 32, False), (3, 32, True), (1, 28, False), (3, 16, True)])
def test_weak_is_a_reflect_padded_crop_with_optional_mirror(c, h, flip):
    n = 500
    x = images(n, c, h, h, seed=h)
    out = A.weak(x, flip, gen(1))
    assert out.dtype == torch.uint8 and out.shape == x.shape
    pad = h // 8
    found = crop_matches(out, x, pad)
    assert all(len(f) == 1 for f in found)              # every output is exactly one crop (random images)
    oy, ox, mirrored = (np.array(v) for v in zip(*(f[0] for f in found)))
    # offsets cover the whole range [-pad, pad] (both extremes), roughly uniformly
    for offs in (oy, ox):
        counts = np.bincount(offs + pad, minlength=2 * pad + 1)
        assert len(counts) == 2 * pad + 1 and counts.min() > 0.5 * n / (2 * pad + 1)
    if flip:
        assert 0.4 < mirrored.mean() < 0.6               # about half are mirrored
    else:
        assert not mirrored.any()                        # never mirrored


def test_per_sample_randomness():
    x = images(1).expand(64, -1, -1, -1).contiguous()
    w = A.weak(x, True, gen(0))
    assert len({bytes(t.numpy()) for t in w}) >= 35      # 162 (offset, flip) choices, drawn per sample
    for variant in ("semifl", "fixmatch"):
        s = A.strong(x, True, gen(0), variant)
        assert s.dtype == torch.uint8 and s.shape == x.shape
        assert len({bytes(t.numpy()) for t in s}) >= 40


@pytest.mark.parametrize("fn", [lambda x, g: A.weak(x, True, g), lambda x, g: A.strong(x, True, g, "semifl"),
                                lambda x, g: A.strong(x, False, g, "fixmatch")])
def test_same_generator_seed_same_views(fn):
    x = images(50, seed=3)
    assert torch.equal(fn(x, gen(7)), fn(x, gen(7)))
    assert not torch.equal(fn(x, gen(7)), fn(x, gen(8)))


# --------------------------------------------------------------------------- strong ops vs PIL
def to_pil(x):
    """float (N, C, H, W) 0..255 -> list of PIL images."""
    a = x.round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return [Image.fromarray(im[..., 0] if im.shape[-1] == 1 else im) for im in a]


def from_pil(ims):
    a = np.stack([np.asarray(im) for im in ims])
    if a.ndim == 3:
        a = a[..., None]
    return torch.from_numpy(a).permute(0, 3, 1, 2).float()


def run_op(pool, name, x, m=1.0, seed=0):
    return pool[name](x.float().clone(), torch.full((len(x),), float(m)), gen(seed))


PIL_AT_MAX = {  # the authors' op at magnitude 10 of 10, in PIL
    "AutoContrast": ImageOps.autocontrast,
    "Brightness": lambda im: ImageEnhance.Brightness(im).enhance(1.9),
    "Color": lambda im: ImageEnhance.Color(im).enhance(1.9),
    "Contrast": lambda im: ImageEnhance.Contrast(im).enhance(1.9),
    "Sharpness": lambda im: ImageEnhance.Sharpness(im).enhance(1.9),
    "Equalize": ImageOps.equalize,
    "Invert": ImageOps.invert,
    "Posterize": lambda im: ImageOps.posterize(im, 4),
    "Solarize": lambda im: ImageOps.solarize(im, 0),
}


@pytest.mark.parametrize("name", sorted(PIL_AT_MAX))
def test_strong_op_at_max_equals_pil(name):
    x = images(24, seed=1).float()
    x[:8] = (x[:8] / 4 + 60).floor()                     # low-contrast images too (AutoContrast, Equalize)
    x[8:10] = 77                                         # constant images: the ops' identity cases
    got = run_op(SEMIFL, name, x)
    want = from_pil([PIL_AT_MAX[name](im) for im in to_pil(x)])
    assert torch.equal(got, want), (got != want).float().mean()


@pytest.mark.parametrize("name, m, pil", [
    ("Brightness", 0.5, lambda im: ImageEnhance.Brightness(im).enhance(0.5)),     # 0.9 m + 0.05
    ("Contrast", 0.3, lambda im: ImageEnhance.Contrast(im).enhance(0.32)),
    ("Posterize", 0.5, lambda im: ImageOps.posterize(im, 6)),                     # floor(4 m) + 4 bits
    ("Solarize", 0.5, lambda im: ImageOps.solarize(im, 128)),                     # threshold 256 - 256 m
])
def test_fixmatch_ops_equal_pil(name, m, pil):
    x = images(12, seed=2).float()
    assert torch.equal(run_op(FIXMATCH, name, x, m), from_pil([pil(im) for im in to_pil(x)]))


def test_simple_ops_by_hand():
    x = images(8, seed=4).float()
    assert torch.equal(run_op(SEMIFL, "Invert", x), 255 - x)
    assert torch.equal(run_op(SEMIFL, "Solarize", x), 255 - x)                    # threshold 0 = invert
    assert torch.equal(run_op(SEMIFL, "Posterize", x), (x.long() & 0xF0).float())
    factor = torch.tensor(1.9, dtype=torch.float32)                                # PIL: float32, truncated
    assert torch.equal(run_op(SEMIFL, "Brightness", x), (x * factor).clamp(0, 255).floor())
    assert (run_op(SEMIFL, "Brightness", x) - (x * 1.9).clamp(0, 255)).abs().max() <= 1
    lo, hi = x.amin((2, 3), keepdim=True), x.amax((2, 3), keepdim=True)            # per channel min -> 0, max -> 255
    ac = run_op(SEMIFL, "AutoContrast", x)
    assert torch.equal(ac.amin((2, 3), keepdim=True), torch.zeros_like(lo))
    assert torch.equal(ac.amax((2, 3), keepdim=True), torch.full_like(hi, 255))
    assert (ac - (x - lo) * 255 / (hi - lo)).abs().max() < 1


def test_equalize_single_channel_exact():
    g = torch.Generator().manual_seed(5)
    skewed = (torch.rand(6, 1, 20, 20, generator=g) ** 3 * 255).floor()       # most pixels dark
    two_levels = torch.where(torch.rand(2, 1, 20, 20, generator=g) < 0.3, 10.0, 200.0)
    x = torch.cat([skewed, two_levels, torch.full((1, 1, 20, 20), 9.0)])
    got = run_op(SEMIFL, "Equalize", x)
    want = from_pil([ImageOps.equalize(im) for im in to_pil(x)])
    assert torch.equal(got, want)
    assert not torch.equal(got[:6], x[:6])                                      # it did change something


def geometric_matches(got, x, pil_fn):
    """For each sample: does got equal pil_fn(image, +1) or pil_fn(image, -1) (random sign)? Returns the signs."""
    ims = to_pil(x)
    plus, minus = from_pil([pil_fn(im, 1) for im in ims]), from_pil([pil_fn(im, -1) for im in ims])
    is_plus = (got == plus).flatten(1).all(1)
    is_minus = (got == minus).flatten(1).all(1)
    assert (is_plus | is_minus).all(), f"{(~(is_plus | is_minus)).sum()} samples match neither sign"
    return is_plus


@pytest.mark.parametrize("name, m, pil_fn", [
    ("Rotate", 1.0, lambda im, s: im.rotate(30 * s)),
    ("Rotate", 0.4, lambda im, s: im.rotate(12 * s)),
    ("ShearX", 1.0, lambda im, s: im.transform(im.size, Image.AFFINE, (1, 0.3 * s, 0, 0, 1, 0))),
    ("ShearY", 1.0, lambda im, s: im.transform(im.size, Image.AFFINE, (1, 0, 0, 0.3 * s, 1, 0))),
    ("TranslateXConst", 0.1, lambda im, s: im.transform(im.size, Image.AFFINE, (1, 0, 10 * s, 0, 1, 0))),
    ("TranslateYConst", 0.1, lambda im, s: im.transform(im.size, Image.AFFINE, (1, 0, 0, 0, 1, 10 * s))),
])
def test_geometric_ops_equal_pil_with_random_sign(name, m, pil_fn):
    x = images(60, seed=6).float()
    is_plus = geometric_matches(run_op(SEMIFL, name, x, m), x, pil_fn)
    assert 0 < is_plus.float().mean() < 1                                       # both signs occur


def test_rotate_by_zero_is_identity():
    x = images(10, seed=7).float()
    assert torch.equal(run_op(SEMIFL, "Rotate", x, 0.0), x)


@pytest.mark.parametrize("size", [32, 16])
def test_translate_const_at_max_blanks_the_image(size):
    x = images(20, h=size, w=size, seed=8).float()
    for name in ("TranslateXConst", "TranslateYConst"):
        assert torch.equal(run_op(SEMIFL, name, x), torch.zeros_like(x))        # +-100 px (scaled) > the image


def test_cutout_const_is_a_gray_square_as_pil_draws_it():
    n, h = 200, 32
    x = images(n, seed=9, avoid=127).float()
    got = run_op(SEMIFL, "CutoutConst", x, seed=11)
    # the op draws the centre (y, then x) uniformly in the image; PIL draws the rectangle, both ends included
    g = gen(11)
    cy, cx = torch.rand(n, generator=g) * h, torch.rand(n, generator=g) * h
    want = []
    for im, y, xc in zip(to_pil(x), cy.tolist(), cx.tolist()):
        x0, y0 = int(max(0, xc - 20)), int(max(0, y - 20))
        im = im.copy()
        ImageDraw.Draw(im).rectangle((x0, y0, int(min(h, x0 + 40)), int(min(h, y0 + 40))), (127, 127, 127))
        want.append(im)
    assert torch.equal(got, from_pil(want))
    changed = (got != x).any(1)
    assert changed.flatten(1).any(1).all()                                      # every image got its square
    assert (got.permute(0, 2, 3, 1)[changed] == 127).all()                      # gray, nothing else changed


# --------------------------------------------------------------------------- strong: the apply rule
def test_semifl_strong_blanks_about_15_percent():
    x = images(2000, seed=10)
    s = A.strong(x, True, gen(12), "semifl")
    blank = (s.flatten(1) == 0).all(1).float().mean().item()
    assert 0.08 <= blank <= 0.25


def test_strong_draws_two_ops_with_replacement_each_applied_half_the_time(monkeypatch):
    # three marker ops adding 1, 10, 100: the output of a black image tells which ops ran
    monkeypatch.setattr(A, "SEMIFL_POOL", [(f"add{v}", lambda x, m, g, v=v: x + v) for v in (1, 10, 100)])
    n = 6000
    out = A.strong(torch.zeros(n, 3, 8, 8, dtype=torch.uint8), True, gen(13), "semifl").long()
    assert (out == out[:, :1, :1, :1]).all()                                    # per image, one value
    v = out[:, 0, 0, 0]
    counts = torch.stack([v % 10, v // 10 % 10, v // 100], 1).float()           # times each op ran
    applied = counts.sum(1)
    assert applied.max() <= 2
    for k, p in ((0, 0.25), (1, 0.5), (2, 0.25)):                               # 2 independent draws, p = 1/2
        assert abs((applied == k).float().mean().item() - p) < 0.03
    assert ((counts.mean(0) - 1 / 3).abs() < 0.04).all()                        # uniform choice of op
    twice = (counts == 2).any(1).float().mean().item()                          # the same op twice: 3 * 1/9 * 1/4
    assert abs(twice - 1 / 12) < 0.025


def test_semifl_strong_uses_max_magnitude_and_fixmatch_appends_cutout(monkeypatch):
    seen = []
    monkeypatch.setattr(A, "SEMIFL_POOL", [("spy", lambda x, m, g: seen.append(m) or x)])
    A.strong(images(200), True, gen(0), "semifl")
    assert seen and all(bool((m == 1).all()) for m in seen)
    # fixmatch: whatever the ops did, a 16 px gray cutout comes last, on every image
    monkeypatch.setattr(A, "FIXMATCH_POOL", [("Identity", A.identity)])
    x = images(300, seed=14, avoid=127)
    s = A.strong(x, False, gen(15), "fixmatch")
    weak = A.weak(x, False, gen(15))                                            # strong's own weak view
    diff = s != weak
    assert diff.flatten(1).any(1).all()
    assert (s[diff] == 127).all()
    assert ((s == 127).all(1).flatten(1).sum(1) <= 17 * 17).all()


# --------------------------------------------------------------------------- mixup, normalize
def test_mixup_per_sample_and_scalar_lambda():
    g = gen(16)
    a, b = torch.rand(5, 3, 4, 4, generator=g), torch.rand(5, 3, 4, 4, generator=g)
    lam = torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0])
    out = A.mixup(a, b, lam)
    for i in range(5):
        assert torch.allclose(out[i], lam[i] * a[i] + (1 - lam[i]) * b[i])
    assert torch.equal(out[0], b[0]) and torch.equal(out[4], a[4])
    assert torch.allclose(A.mixup(a, b, 0.3), 0.3 * a + 0.7 * b)


def test_normalize_uses_the_dataset_mean_and_std():
    x = torch.zeros(2, 3, 2, 2, dtype=torch.uint8)
    x[1, 1, 0, 1] = 200
    x[0, 2, 1, 0] = 255
    mean, std = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
    y = A.normalize(x, mean, std)
    assert y.dtype == torch.float32 and y.shape == x.shape
    assert y[1, 1, 0, 1].item() == pytest.approx((200 / 255 - 0.4822) / 0.1994, rel=1e-5)
    assert y[0, 2, 1, 0].item() == pytest.approx((1 - 0.4465) / 0.2010, rel=1e-5)
    assert y[0, 0, 0, 0].item() == pytest.approx(-0.4914 / 0.2023, rel=1e-5)
    g1 = A.normalize(torch.full((1, 1, 2, 2), 51, dtype=torch.uint8), (0.2860,), (0.3530,))
    assert torch.allclose(g1, torch.full_like(g1, (0.2 - 0.2860) / 0.3530))

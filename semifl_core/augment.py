"""Batched augmentation on the device: every image draws its own ops and parameters, no per-image loop.

Images stay uint8 (N, C, H, W) in and out, so a round's augmented views are compact; `normalize` turns them into the
model's float input. The ops follow PIL's definitions (as used by the authors' code):

weak    random horizontal flip (not for digits) + random crop with reflect padding (4 px at 32x32, H/8).
strong  the authors' RandAugment(n=2, m=10) after the weak ops: 2 ops drawn with replacement from 15, each
        applied iff rand() + U(0.2, 0.8) >= 1, at the maximum magnitude (random sign where shown).
        `fixmatch`: FixMatch's RandAugmentMC: 14 ops with Identity, magnitude v ~ {1..9}/10, p = 0.5,
        then a 16 px gray Cutout (scaled with the image).
Geometric ops resample NEAREST and fill with black (0), as PIL's defaults do; sizes in pixels scale with the image
(H / 32).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _rand(n, g, device):
    return torch.rand(n, generator=g, device=device)


def _sign(n, g, device):
    return torch.where(_rand(n, g, device) < 0.5, -1.0, 1.0)


def normalize(x: torch.Tensor, mean, std) -> torch.Tensor:
    """uint8 (or 0..255 float) images -> float model input."""
    mean = torch.as_tensor(mean, dtype=torch.float32, device=x.device).view(1, -1, 1, 1)
    std = torch.as_tensor(std, dtype=torch.float32, device=x.device).view(1, -1, 1, 1)
    return (x.float() / 255 - mean) / std


# ---------------------------------------------------------------------- weak
def weak(x: torch.Tensor, flip: bool, g: torch.Generator) -> torch.Tensor:
    """Flip + reflect-padded random crop as one gather: output (i, j) reads input (rows[i], cols[j])."""
    n, c, h, w = x.shape
    pad = h // 8
    dev = x.device
    oy = torch.randint(0, 2 * pad + 1, (n, 1), generator=g, device=dev) - pad
    ox = torch.randint(0, 2 * pad + 1, (n, 1), generator=g, device=dev) - pad
    rows = _reflect(torch.arange(h, device=dev) + oy, h)
    cols = _reflect(torch.arange(w, device=dev) + ox, w)
    if flip:
        mirror = _rand(n, g, dev) < 0.5
        cols = torch.where(mirror[:, None], w - 1 - cols, cols)
    out = x[torch.arange(n, device=dev)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()


def _reflect(i: torch.Tensor, size: int) -> torch.Tensor:
    i = i.abs()
    return torch.where(i >= size, 2 * (size - 1) - i, i)


# ---------------------------------------------------------------------- strong ops (float 0..255 in/out)
def _blend(degenerate, x, factor):
    return (degenerate + factor.view(-1, 1, 1, 1) * (x - degenerate)).clamp(0, 255)


def _gray(x):
    """PIL's convert("L"): (R*19595 + G*38470 + B*7471 + 0x8000) >> 16 (rounded, exact in float32)."""
    if x.shape[1] == 1:
        return x
    return ((19595 * x[:, 0:1] + 38470 * x[:, 1:2] + 7471 * x[:, 2:3] + 32768) / 65536).floor()


def autocontrast(x, m, g):
    lo = x.amin(dim=(2, 3), keepdim=True)
    hi = x.amax(dim=(2, 3), keepdim=True)
    scale = 255 / (hi - lo).clamp(min=1)
    return torch.where(hi > lo, ((x - lo) * scale).floor().clamp(0, 255), x)


def equalize(x, m, g):
    """PIL's ImageOps.equalize per channel: lut[i] = (step // 2 + #pixels below i) // step."""
    n, c, h, w = x.shape
    flat = x.reshape(n * c, h * w).long()
    hist = torch.zeros(n * c, 256, device=x.device).scatter_add_(1, flat, torch.ones_like(flat, dtype=torch.float))
    last = hist.masked_fill(hist == 0, float("nan"))
    last_idx = 255 - torch.argmax((hist.flip(1) > 0).int(), dim=1)           # highest non-empty bin
    step = torch.div(hist.sum(1) - hist.gather(1, last_idx[:, None])[:, 0], 255, rounding_mode="floor")
    below = torch.cumsum(hist, 1) - hist
    lut = torch.div(torch.div(step, 2, rounding_mode="floor")[:, None] + below, step.clamp(min=1)[:, None],
                    rounding_mode="floor").clamp(0, 255)
    out = lut.gather(1, flat).float()
    keep = (step == 0) | ((~torch.isnan(last)).sum(1) <= 1)
    out = torch.where(keep[:, None], flat.float(), out)
    return out.reshape(n, c, h, w)


def invert(x, m, g):
    return 255 - x


def identity(x, m, g):
    return x


def _enhance(degenerate_fn, max_v, bias):
    def op(x, m, g):  # PIL's Image.blend truncates its float32 result to uint8 (after clipping)
        return _blend(degenerate_fn(x), x, m * max_v + bias).floor()
    return op


def _smooth(x):
    """PIL's SMOOTH filter (1 1 1 / 1 5 1 / 1 1 1) / 13; the border keeps its pixels."""
    c = x.shape[1]
    k = torch.tensor([[1., 1, 1], [1, 5, 1], [1, 1, 1]], device=x.device) / 13
    out = F.conv2d(x, k.expand(c, 1, 3, 3), padding=1, groups=c).round()
    border = torch.ones_like(x, dtype=torch.bool)
    border[:, :, 1:-1, 1:-1] = False
    return torch.where(border, x, out)


def _contrast_degenerate(x):
    return (_gray(x).mean(dim=(1, 2, 3), keepdim=True) + 0.5).floor().expand_as(x)


def _posterize(bias):
    def op(x, m, g):
        bits = (m * 4).floor() + bias
        div = (2 ** (8 - bits)).view(-1, 1, 1, 1)
        return (x / div).floor() * div
    return op


def solarize(x, m, g):
    threshold = (256 - (m * 256).floor()).view(-1, 1, 1, 1)
    return torch.where(x >= threshold, 255 - x, x)


def _cutout(size_at_32, gray=127.0, scaled=True):
    """PIL rectangle from (x0, y0) = max(0, centre - v/2) to min(size, x0 + v), both ends included. v scales with the
    image (size_at_32 x H / 32), or with scaled=False is size_at_32 pixels at any size (the authors' code)."""
    def op(x, m, g):
        n, c, h, w = x.shape
        v = (m * size_at_32 * (h / 32 if scaled else 1)).floor()
        cy, cx = _rand(n, g, x.device) * h, _rand(n, g, x.device) * w
        y0, x0 = (cy - v / 2).clamp(min=0).floor(), (cx - v / 2).clamp(min=0).floor()
        y1, x1 = torch.minimum(y0 + v, torch.tensor(float(h))), torch.minimum(x0 + v, torch.tensor(float(w)))
        ys = torch.arange(h, device=x.device).view(1, h, 1)
        xs = torch.arange(w, device=x.device).view(1, 1, w)
        box = ((ys >= y0.view(-1, 1, 1)) & (ys <= y1.view(-1, 1, 1)) & (xs >= x0.view(-1, 1, 1))
               & (xs <= x1.view(-1, 1, 1)))
        return torch.where(box[:, None], torch.full_like(x, gray), x)
    return op


def _warp(x, matrix, mode):
    """Output pixel centre p (pixels) samples the input at matrix @ [p, 1]; outside is black (0). "nearest" is PIL's
    Image.transform(AFFINE, NEAREST) bit for bit: PIL rounds the matrix to 16.16 fixed point (offsets at the pixel
    centre) and reads input pixel floor(src) (float32 coordinates or grid_sample's round-half-even would now and then
    pick a neighbour). "bilinear": grid_sample with PIL's edges (black where the source is outside, edge pixels as
    neighbours at the border), PIL's BILINEAR to one gray level."""
    n, c, h, w = x.shape
    if mode == "nearest":
        m = matrix.to(torch.float64)
        fix = lambda v: torch.floor(v * 65536.0 + 0.5).long()           # PIL's FIX()
        a0, a1, a3, a4 = fix(m[:, 0, 0]), fix(m[:, 0, 1]), fix(m[:, 1, 0]), fix(m[:, 1, 1])
        a2 = fix(m[:, 0, 2] + m[:, 0, 0] * 0.5 + m[:, 0, 1] * 0.5)
        a5 = fix(m[:, 1, 2] + m[:, 1, 0] * 0.5 + m[:, 1, 1] * 0.5)
        ys = torch.arange(h, device=x.device).view(1, h, 1)
        xs = torch.arange(w, device=x.device).view(1, 1, w)
        v = lambda t: t.view(n, 1, 1)
        ix = torch.div(v(a2) + ys * v(a1) + xs * v(a0), 65536, rounding_mode="floor").view(n, h * w)
        iy = torch.div(v(a5) + ys * v(a4) + xs * v(a3), 65536, rounding_mode="floor").view(n, h * w)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        flat = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1))[:, None, :].expand(n, c, h * w)
        out = x.reshape(n, c, h * w).gather(2, flat)
        return torch.where(inside[:, None, :], out, torch.zeros_like(out)).view(n, c, h, w)
    ys, xs = torch.meshgrid(torch.arange(h, device=x.device) + 0.5, torch.arange(w, device=x.device) + 0.5,
                            indexing="ij")
    p = torch.stack([xs, ys, torch.ones_like(xs)], -1).view(1, h * w, 3).to(x.dtype)
    src = p @ matrix.to(x.dtype).transpose(1, 2)                        # (n, h*w, 2) in pixels
    grid = torch.stack([2 * src[..., 0] / w - 1, 2 * src[..., 1] / h - 1], -1).view(n, h, w, 2)
    # as PIL: a pixel whose source lies outside the image is black; inside, neighbours past the edge are the edge's
    inside = ((src[..., 0] >= 0) & (src[..., 0] < w) & (src[..., 1] >= 0) & (src[..., 1] < h)).view(n, 1, h, w)
    out = F.grid_sample(x, grid, mode=mode, padding_mode="border", align_corners=False)
    return torch.where(inside, out, torch.zeros_like(out)).round()


def _affine(a, b, c, d, e, f):
    return torch.stack([torch.stack([a, b, c], -1), torch.stack([d, e, f], -1)], 1)


def _rotate(max_deg):
    def op(x, m, g):
        n, _, h, w = x.shape
        t = torch.deg2rad(m.double() * max_deg * _sign(n, g, x.device))   # float64, as PIL
        cos, sin = torch.cos(t), torch.sin(t)
        cx, cy = w / 2, h / 2          # src = centre + R (p - centre)
        mat = _affine(cos, -sin, cx - cos * cx + sin * cy, sin, cos, cy - sin * cx - cos * cy)
        return _warp(x, mat, "nearest")
    return op


def _shear(axis, max_v, mode="nearest"):
    """mode="bilinear": the authors' RandAugment's resampling (PIL's BILINEAR to one gray level, not bit for bit)."""
    def op(x, m, g):
        n = x.shape[0]
        s = m.double() * max_v * _sign(n, g, x.device)
        one, zero = torch.ones_like(s), torch.zeros_like(s)
        mat = _affine(one, s, zero, zero, one, zero) if axis == "x" else _affine(one, zero, zero, s, one, zero)
        return _warp(x, mat, mode)
    return op


def _translate(axis, max_v, relative):
    def op(x, m, g):
        n, _, h, w = x.shape
        size = w if axis == "x" else h
        t = m.double() * max_v * _sign(n, g, x.device) * (size if relative else size / 32)
        t = t.trunc() if relative else t
        one, zero = torch.ones_like(t), torch.zeros_like(t)
        mat = _affine(one, zero, t, zero, one, zero) if axis == "x" else _affine(one, zero, zero, zero, one, t)
        return _warp(x, mat, "nearest")
    return op


# (name, op) pools; each op takes per-sample magnitudes m in [0, 1] (1 = the maximum)
SEMIFL_POOL = [
    ("AutoContrast", autocontrast),
    ("Brightness", _enhance(torch.zeros_like, 1.8, 0.1)),
    ("Color", _enhance(_gray, 1.8, 0.1)),
    ("Contrast", _enhance(_contrast_degenerate, 1.8, 0.1)),
    ("CutoutConst", _cutout(40)),
    ("Equalize", equalize),
    ("Invert", invert),
    ("Posterize", _posterize(0)),
    ("Rotate", _rotate(30)),
    ("Sharpness", _enhance(_smooth, 1.8, 0.1)),
    ("ShearX", _shear("x", 0.3)),
    ("ShearY", _shear("y", 0.3)),
    ("Solarize", solarize),
    ("TranslateXConst", _translate("x", 100, relative=False)),
    ("TranslateYConst", _translate("y", 100, relative=False)),
]
FIXMATCH_POOL = [
    ("AutoContrast", autocontrast),
    ("Brightness", _enhance(torch.zeros_like, 0.9, 0.05)),
    ("Color", _enhance(_gray, 0.9, 0.05)),
    ("Contrast", _enhance(_contrast_degenerate, 0.9, 0.05)),
    ("Equalize", equalize),
    ("Identity", identity),
    ("Posterize", _posterize(4)),
    ("Rotate", _rotate(30)),
    ("Sharpness", _enhance(_smooth, 0.9, 0.05)),
    ("ShearX", _shear("x", 0.3)),
    ("ShearY", _shear("y", 0.3)),
    ("Solarize", solarize),
    ("TranslateX", _translate("x", 0.3, relative=True)),
    ("TranslateY", _translate("y", 0.3, relative=True)),
]


def semifl_pool(shear: str = "nearest", cutout: str = "scaled") -> list:
    """SEMIFL_POOL with the authors' two details as options: shear resampling (nearest | bilinear) and the
    CutoutConst square (scaled with the image | fixed at 40 px)."""
    if (shear, cutout) == ("nearest", "scaled"):
        return SEMIFL_POOL
    ops = {"ShearX": _shear("x", 0.3, shear), "ShearY": _shear("y", 0.3, shear),
           "CutoutConst": _cutout(40, scaled=cutout == "scaled")}
    return [(name, ops.get(name, op)) for name, op in SEMIFL_POOL]


def strong(x: torch.Tensor, flip: bool, g: torch.Generator, variant: str = "semifl", n_ops: int = 2,
           shear: str = "nearest", cutout: str = "scaled") -> torch.Tensor:
    """Weak ops, then RandAugment with per-sample ops and parameters (`shear`, `cutout`: semifl_pool's options)."""
    out = weak(x, flip, g).float()
    n, dev = out.shape[0], out.device
    pool = semifl_pool(shear, cutout) if variant == "semifl" else FIXMATCH_POOL
    for _ in range(n_ops):
        choice = torch.randint(len(pool), (n,), generator=g, device=dev)
        if variant == "semifl":
            applied = _rand(n, g, dev) + (0.2 + 0.6 * _rand(n, g, dev)) >= 1
            mag = torch.ones(n, device=dev)
        else:
            applied = _rand(n, g, dev) < 0.5
            mag = torch.randint(1, 10, (n,), generator=g, device=dev).float() / 10
        for k, (_, op) in enumerate(pool):
            idx = torch.nonzero((choice == k) & applied).flatten()
            if len(idx):
                out[idx] = op(out[idx], mag[idx], g)
    if variant == "fixmatch":
        out = _cutout(16)(out, torch.ones(n, device=dev), g)
    return out.round().clamp(0, 255).to(torch.uint8)


def mixup(a: torch.Tensor, b: torch.Tensor, lam) -> torch.Tensor:
    """lam * a + (1 - lam) * b, with lam a scalar or one value per leading index."""
    if torch.is_tensor(lam) and lam.dim():
        lam = lam.view(-1, *([1] * (a.dim() - 1)))
    return lam * a + (1 - lam) * b

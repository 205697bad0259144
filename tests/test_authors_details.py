"""The three details where the authors' code runs otherwise than ours, as switches: the mix set's
draws (mix_draws), the shear's resampling (shear_resample) and CutoutConst's size (cutout_size)."""
import numpy as np
import pytest
import torch
from PIL import Image

from semifl_core import augment
from semifl_core.config import ConfigError, profile
from semifl_core.methods.semifl import client_objective
from semifl_core.tasks import make_tasks


def _mix_indices(per_read: bool, n_fix=5, n_all=100, epochs=5.0):
    x = torch.arange(n_all, dtype=torch.uint8).view(n_all, 1, 1, 1).expand(n_all, 1, 8, 8).contiguous()
    y = torch.arange(n_all)
    fix = np.arange(n_fix)
    mix = np.random.default_rng(1).integers(0, n_all, size=n_fix)   # Eq. (4): |fix| draws, once
    spec = {"x": x[fix], "y": y[fix], "x_mix": x if per_read else x[mix], "y_mix": y if per_read else y[mix]}
    if per_read:
        spec["mix_per_read"] = True
    task, = make_tasks([spec], 10, epochs, np.random.default_rng(0), torch.Generator().manual_seed(0), flip=False,
                       view="weak", mix_alpha=0.75)
    return task.views["y_mix"][:, :5].flatten().numpy(), set(mix.tolist())


def test_the_mix_set_is_drawn_once_a_round_or_afresh_at_every_read():
    reused, drawn = _mix_indices(per_read=False)
    assert set(reused.tolist()) <= drawn                         # every epoch reads the same |fix| draws
    fresh, _ = _mix_indices(per_read=True)
    assert len(fresh) == 25 and len(set(fresh.tolist())) > 10     # 5 epochs x 5 reads, drawn from all 100


def test_bilinear_shear_is_pils_to_one_gray_level_and_nearest_is_pils_exactly():
    rng = np.random.default_rng(0)
    x = (rng.random((6, 1, 28, 28)) * 255).astype(np.uint8)
    one, zero = torch.ones(6, dtype=torch.float64), torch.zeros(6, dtype=torch.float64)
    for s in (0.3, -0.3):
        mat = augment._affine(one, torch.full((6,), s, dtype=torch.float64), zero, zero, one, zero)
        for mode, pil_mode, bound in (("bilinear", Image.BILINEAR, 1), ("nearest", Image.NEAREST, 0)):
            got = augment._warp(torch.as_tensor(x).float(), mat, mode).numpy()
            want = np.stack([np.array(Image.fromarray(im[0]).transform((28, 28), Image.AFFINE, (1, s, 0, 0, 1, 0),
                                                                       pil_mode))[None] for im in x])
            assert np.abs(got - want).max() <= bound, (mode, s)
    nearest = augment._warp(torch.as_tensor(x).float(), mat, "nearest")
    assert not torch.equal(nearest, augment._warp(torch.as_tensor(x).float(), mat, "bilinear"))


@pytest.mark.parametrize("cutout, side", [("scaled", 35), ("fixed", 40)])
def test_cutout_const_is_40_px_scaled_with_the_image_or_fixed(cutout, side):
    x = torch.zeros(200, 1, 28, 28)
    op = dict(augment.semifl_pool(cutout=cutout))["CutoutConst"]
    out = op(x, torch.ones(200), torch.Generator().manual_seed(0))
    rows = (out == 127).any(3).sum(2).flatten()                  # gray rows of each image's square
    # PIL's rectangle includes both ends, clipped at the image: side + 1 rows where it fits, fewer at the border
    assert rows.max() == min(side + 1, 28) and rows.min() >= min(side // 2, 28) - 1


def test_the_switches_reach_the_clients_tasks_and_defaults_keep_the_run_key():
    cfg = profile("small", mix_draws="per-read", shear_resample="bilinear", cutout_size="fixed")
    assert client_objective(cfg)[1]["strong_options"] == {"shear": "bilinear", "cutout": "fixed"}
    assert profile("small").key() == "56fba584081a" and cfg.key() != profile("small").key()
    assert augment.semifl_pool() is augment.SEMIFL_POOL
    for field, value in (("mix_draws", "fresh"), ("shear_resample", "bicubic"), ("cutout_size", "40")):
        with pytest.raises(ConfigError, match=rf"^{field}='{value}': allowed are"):
            profile("small", **{field: value})

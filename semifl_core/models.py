"""WideResNet-28-k (the paper's backbones) and a small CNN for 28x28 images on a CPU.

Normalisation is a switch: `sbn` (static BN, the paper's: batch statistics while training, statistics computed once
from data for inference, see sbn.py), `gn` (GroupNorm) or `bn` (plain BN with running statistics).
"""
from __future__ import annotations

import copy
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from .augment import normalize


_VALID = None   # the real samples of a padded batch while valid_samples is active (Speed.masked_steps), else None
_PARTS = 1      # while batch_parts is active: a training batch is that many batches of one size, one after the other


@contextmanager
def valid_samples(mask: torch.Tensor | None):
    """Within it, static BN in training mode takes batch statistics over the samples where mask (B,) is True (None:
    all): a padded batch normalises its real samples as they alone would be (per part, inside batch_parts)."""
    global _VALID
    saved, _VALID = _VALID, mask
    try:
        yield
    finally:
        _VALID = saved


@contextmanager
def batch_parts(parts: int):
    """Within it, static BN in training mode normalises a batch as `parts` equal consecutive batches, each by its own
    statistics: one forward computes what one per part would (SemiFL's fix and mix batches, engine.Net.parts)."""
    global _PARTS
    saved, _PARTS = _PARTS, parts
    try:
        yield
    finally:
        _PARTS = saved


def part_batch_norm(x, parts: int, valid, weight, bias, eps: float):
    """F.batch_norm in training mode on each of `parts` equal consecutive blocks of x (parts * B, C, H, W), with the
    block's mean and biased variance over its samples where valid (B,) is True (None: all); a padded sample's output is
    ignored by its loss."""
    if valid is None:   # native batch norm per block
        return torch.cat([F.batch_norm(p, None, None, weight, bias, True, 0.0, eps) for p in x.chunk(parts)])
    g = x.unflatten(0, (parts, -1))                                             # (P, B, C, H, W)
    m = valid.to(x.dtype).view(1, -1, 1, 1, 1)
    count = m.sum() * x.shape[2] * x.shape[3]
    mean = (g * m).sum(dim=(1, 3, 4), keepdim=True) / count
    var = ((g - mean).square() * m).sum(dim=(1, 3, 4), keepdim=True) / count
    return ((g - mean) * (torch.rsqrt(var + eps) * weight.view(-1, 1, 1)) + bias.view(-1, 1, 1)).flatten(0, 1)


class StaticBatchNorm2d(nn.Module):
    """Batch norm that never tracks running statistics: training mode uses the batch's (its real samples', inside
    valid_samples); eval mode the `mean`/`var` buffers that sbn.compute_statistics filled in."""

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.register_buffer("mean", torch.zeros(channels))
        self.register_buffer("var", torch.ones(channels))
        self.record = None  # sbn.compute_statistics puts a list here to receive each batch's statistics
        self.group = None   # ... and, for one forward of many batches, their size (sbn_one_pass)

    def forward(self, x):
        if not self.training:
            return F.batch_norm(x, self.mean, self.var, self.weight, self.bias, False, 0.0, self.eps)
        if self.record is not None:
            with torch.no_grad():
                if self.group:
                    return self.grouped(x)
                self.record.append((x.mean(dim=(0, 2, 3))[None], x.var(dim=(0, 2, 3), unbiased=True)[None]))
        if _VALID is not None or _PARTS > 1:
            return part_batch_norm(x, _PARTS, _VALID, self.weight, self.bias, self.eps)
        return F.batch_norm(x, None, None, self.weight, self.bias, True, 0.0, self.eps)

    def grouped(self, x):
        """Training mode for a batch of consecutive groups of `group` images: each group normalised by its own
        statistics (what one forward per group computes), each group's mean and unbiased variance recorded."""
        g = x.unflatten(0, (-1, self.group))                                   # (G, group, C, H, W)
        var, mean = torch.var_mean(g, dim=(1, 3, 4), correction=0, keepdim=True)
        n = g[0, :, 0].numel()                                                  # values per channel in a group
        self.record.append((mean.flatten(1), var.flatten(1) * (n / (n - 1))))
        scale = torch.rsqrt(var + self.eps) * self.weight.view(-1, 1, 1)
        return ((g - mean) * scale + self.bias.view(-1, 1, 1)).flatten(0, 1)


def make_norm(kind: str):
    if kind == "sbn":
        return StaticBatchNorm2d
    if kind == "gn":
        return lambda c: nn.GroupNorm(min(4, c), c)
    if kind == "bn":
        return lambda c: nn.BatchNorm2d(c, momentum=0.1)
    raise ValueError(kind)


class WideBlock(nn.Module):
    """Pre-activation block. The first block of a group (channels change) pre-activates its shortcut input."""

    def __init__(self, cin: int, cout: int, stride: int, norm):
        super().__init__()
        self.bn1 = norm(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, 0, bias=False) if cin != cout else None

    def forward(self, x):
        o = F.relu(self.bn1(x))
        out = self.conv2(F.relu(self.bn2(self.conv1(o))))
        return out + (x if self.shortcut is None else self.shortcut(o))


class WideResNet(nn.Module):
    def __init__(self, in_channels: int, num_classes: int, depth: int = 28, widen: int = 2, norm="sbn"):
        super().__init__()
        n = (depth - 4) // 6
        norm = make_norm(norm)
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        blocks = []
        for g, stride in zip(range(3), (1, 2, 2)):
            for i in range(n):
                blocks.append(WideBlock(widths[g] if i == 0 else widths[g + 1], widths[g + 1],
                                        stride if i == 0 else 1, norm))
        self.blocks = nn.Sequential(*blocks)
        self.bn = norm(widths[3])
        self.fc = nn.Linear(widths[3], num_classes)
        init_weights(self)

    def forward(self, x):
        x = F.relu(self.bn(self.blocks(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class SmallCNN(nn.Module):
    """Three 3x3 conv-norm-ReLU stages (two max-pooled), global average pool, linear."""

    def __init__(self, in_channels: int, num_classes: int, widths=(16, 32, 64), norm="sbn"):
        super().__init__()
        norm = make_norm(norm)
        layers, cin = [], in_channels
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(cin, w, 3, 1, 1, bias=False), norm(w), nn.ReLU()]
            if i < len(widths) - 1:
                layers.append(nn.MaxPool2d(2))
            cin = w
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)
        init_weights(self)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class ResNet9(nn.Module):
    """FedDure's backbone (the DAWNBench ResNet-9): prep 64; 128 pooled + residual; 256 pooled; 512 pooled +
    residual; global max pool; linear. Each conv is 3x3-norm-ReLU. A 1-channel input gets a 1-channel stem."""

    def __init__(self, in_channels: int, num_classes: int, norm="bn"):
        super().__init__()
        norm = make_norm(norm)

        def block(cin, cout, pool=False):
            layers = [nn.Conv2d(cin, cout, 3, 1, 1, bias=False), norm(cout), nn.ReLU()]
            return nn.Sequential(*layers, *([nn.MaxPool2d(2)] if pool else []))
        self.prep = block(in_channels, 64)
        self.layer1, self.res1 = block(64, 128, pool=True), nn.Sequential(block(128, 128), block(128, 128))
        self.layer2 = block(128, 256, pool=True)
        self.layer3, self.res3 = block(256, 512, pool=True), nn.Sequential(block(512, 512), block(512, 512))
        self.fc = nn.Linear(512, num_classes)
        init_weights(self)

    def forward(self, x):
        x = self.layer1(self.prep(x))
        x = self.layer3(self.layer2(x + self.res1(x)))
        x = x + self.res3(x)
        return self.fc(F.adaptive_max_pool2d(x, 1).flatten(1))


def init_weights(model: nn.Module) -> None:
    """Kaiming-normal (fan_out) convs, norm weight 1 / bias 0, linear bias 0 (the authors' init)."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (StaticBatchNorm2d, nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)


CNN_WIDTHS = {"cnn": (16, 32, 64), "cnn-w2": (32, 64, 128)}   # cnn-w2: twice as wide, ~4x the FLOPs


def make_model(cfg, in_channels: int) -> nn.Module:
    if cfg.model in CNN_WIDTHS:
        return SmallCNN(in_channels, cfg.num_classes, CNN_WIDTHS[cfg.model], norm=cfg.norm)
    if cfg.model == "resnet9":
        return ResNet9(in_channels, cfg.num_classes, norm=cfg.norm)
    widen = {"wrn28x2": 2, "wrn28x8": 8}[cfg.model]
    return WideResNet(in_channels, cfg.num_classes, 28, widen, norm=cfg.norm)


@torch.no_grad()
def folded(model: nn.Module) -> nn.Module:
    """An inference copy of model (eval mode) with every static-BN layer that directly follows a conv folded into that
    conv: W' = W g / sqrt(var + eps), b' = beta - g mean / sqrt(var + eps). Equal to model in eval mode up to float
    rounding, one pass fewer over every activation; pre-activation blocks (WideResNet) are left as they are."""
    out = copy.deepcopy(model).eval()
    for seq in [m for m in out.modules() if isinstance(m, nn.Sequential)]:
        for i in range(len(seq) - 1):
            conv, bn = seq[i], seq[i + 1]
            if isinstance(conv, nn.Conv2d) and isinstance(bn, StaticBatchNorm2d) and conv.bias is None:
                scale = bn.weight / torch.sqrt(bn.var + bn.eps)
                conv.weight.mul_(scale.view(-1, 1, 1, 1))
                conv.bias = nn.Parameter(bn.bias - bn.mean * scale)
                seq[i + 1] = nn.Identity()
    return out


@torch.no_grad()
def predict(model, images: torch.Tensor, mean, std, batch_size: int = 1000, logits: bool = False) -> torch.Tensor:
    """Softmax outputs (or the logits) of model in eval mode (sBN statistics) for uint8 images."""
    was = model.training
    model.eval()
    head = (lambda z: z) if logits else (lambda z: torch.softmax(z, 1))  # noqa: E731
    out = torch.cat([head(model(normalize(images[i:i + batch_size], mean, std)))
                     for i in range(0, len(images), batch_size)]) if len(images) else torch.zeros(0)
    model.train(was)
    return out


def load_weights(model, weights: dict) -> None:
    """Copy the named parameters and buffers found in weights into model (in place)."""
    with torch.no_grad():
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            if name in weights:
                t.copy_(weights[name])

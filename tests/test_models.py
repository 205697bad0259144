"""The paper's backbones: sizes and the pre-activation wiring of WideResNet-28-k."""
import torch
import torch.nn.functional as F

from semifl_core.config import profile
from semifl_core.models import StaticBatchNorm2d, WideBlock, make_model


def _count(model):
    return sum(p.numel() for p in model.parameters())


def test_wide_resnet_sizes_match_the_paper():
    assert abs(_count(make_model(profile("paper", "cifar10"), 3)) - 1.47e6) < 0.01e6      # WRN-28-2
    assert abs(_count(make_model(profile("paper", "cifar100"), 3)) - 23.4e6) < 0.1e6     # WRN-28-8


def test_first_block_of_a_group_preactivates_its_shortcut_input():
    torch.manual_seed(0)
    block = WideBlock(4, 8, 2, StaticBatchNorm2d).train()
    x = torch.randn(3, 4, 8, 8)
    o = F.relu(block.bn1(x))
    expected = block.conv2(F.relu(block.bn2(block.conv1(o)))) + block.shortcut(o)
    torch.testing.assert_close(block(x), expected)
    same = WideBlock(8, 8, 1, StaticBatchNorm2d).train()        # inner block: identity shortcut on raw x
    y = torch.randn(3, 8, 4, 4)
    torch.testing.assert_close(same(y), same.conv2(F.relu(same.bn2(same.conv1(F.relu(same.bn1(y)))))) + y)


def test_init_and_norm_switch():
    m = make_model(profile("paper", "cifar10"), 3)
    assert all(torch.all(b.weight == 1) and torch.all(b.bias == 0)
               for b in m.modules() if isinstance(b, StaticBatchNorm2d))
    assert torch.all(m.fc.bias == 0)
    gn = make_model(profile("smoke", norm="gn"), 3)
    assert any(isinstance(x, torch.nn.GroupNorm) for x in gn.modules())
    assert not any(isinstance(x, StaticBatchNorm2d) for x in gn.modules())
    bn = make_model(profile("smoke", norm="bn", engine="sequential"), 3)
    assert any(isinstance(x, torch.nn.BatchNorm2d) and x.track_running_stats for x in bn.modules())


def test_folded_static_bn_predicts_as_the_model_does():
    """models.folded: every conv -> static BN pair becomes one conv with a bias, the outputs equal to float rounding
    (tests/float_bound.py: ResNet9's 9 layers one after the other, its longest sum a convolution's 512 x 3 x 3
    inputs); the original model is untouched."""
    from float_bound import assert_near, rtol
    import torch
    from semifl_core.models import ResNet9, SmallCNN, StaticBatchNorm2d, folded
    torch.manual_seed(0)
    for model in (SmallCNN(1, 10), ResNet9(1, 10, norm="sbn")):
        for m in model.modules():
            if isinstance(m, StaticBatchNorm2d):   # statistics and affine parameters far from the identity
                m.mean.uniform_(-1, 1), m.var.uniform_(0.5, 2), m.weight.data.uniform_(0.5, 2)
                m.bias.data.uniform_(-1, 1)
        x = torch.randn(8, 1, 28, 28)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        fast = folded(model)
        assert not any(isinstance(m, StaticBatchNorm2d) for m in fast.modules())
        with torch.no_grad():
            assert_near(fast(x), model.eval()(x), rtol(9, 512 * 3 * 3), type(model).__name__)
        assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())

"""Config validation (one-line ConfigErrors naming field, value and what is allowed), the paper's values,
the run key."""
import math
import re

import pytest

from semifl_core.config import Config, ConfigError, parse_value, profile


def smoke(**changes) -> Config:
    """The smoke profile (synthetic data: 2000 training images, 10 classes) with some fields changed."""
    return profile("smoke", **changes)


def raises_one_line(fn, *must_contain):
    """fn() raises a ConfigError whose message is one line and contains every string in must_contain."""
    with pytest.raises(ConfigError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for part in must_contain:
        assert part in msg, (part, msg)
    return msg


# --------------------------------------------------------------------------- invalid fields
@pytest.mark.parametrize("changes, must_contain", [
    # N_S must split evenly over the classes
    (dict(num_supervised=105), ["num_supervised=105", "multiple of the number of classes (10)"]),
    # N_S at most the training set (synthetic: 2000)
    (dict(num_supervised=2010), ["num_supervised=2010", "at most the training set size (2000)"]),
    (dict(active_rate=0.0), ["active_rate=0.0", "(0, 1]"]),
    (dict(active_rate=1.5), ["active_rate=1.5", "(0, 1]"]),
    (dict(dataset="cifar11"), ["dataset='cifar11'", "cifar10", "svhn", "did you mean 'cifar10'"]),
    (dict(partition="banana"), ["partition='banana'", "'iid'", "'non-iid-l-K'", "'dir-ALPHA'"]),
    (dict(partition="dir-1.2.3"), ["partition='dir-1.2.3'", "'dir-ALPHA'"]),   # matched the regex, no float
    (dict(model="resnet50"), ["model='resnet50'", "wrn28x2", "cnn"]),
    (dict(algorithm="semifl2"), ["algorithm='semifl2'", "fedavg-fixmatch", "did you mean 'semifl'"]),
    (dict(partition="non-iid-l-11"), ["partition='non-iid-l-11'", "between 1 and the number of classes (10)"]),
    (dict(partition="non-iid-l-0"), ["partition='non-iid-l-0'", "between 1 and the number of classes (10)"]),
    (dict(partition="dir-0"), ["partition='dir-0'", "alpha must be > 0"]),
    # the Dirichlet split needs >= 10 samples per client (1900 client samples: at most 190 clients)
    (dict(partition="dir-0.5", num_clients=191), ["partition='dir-0.5'", "num_clients <= 190"]),
    (dict(threshold=1.5), ["threshold=1.5", "[0, 1]"]),
    (dict(threshold=-0.1), ["threshold=-0.1", "[0, 1]"]),
    (dict(rounds=0), ["rounds=0", "integer >= 1"]),
    (dict(local_epochs=0.0), ["local_epochs=0.0", "> 0"]),
    (dict(local_epochs=-1.0), ["local_epochs=-1.0", "> 0"]),
    (dict(lr=-0.01), ["lr=-0.01", ">= 0"]),
    (dict(momentum=1.0), ["momentum=1.0", "< 1"]),
    # NaN compares False with everything, so it needs its own check (`--set lr=nan` parses as a float)
    (dict(lr=float("nan")), ["lr=nan", "finite"]),
    (dict(clip_norm=float("inf")), ["clip_norm=inf", "finite"]),
    (dict(threshold=float("nan")), ["threshold=nan", "finite"]),
    # synthetic: 2000 - 100 = 1900 client samples
    (dict(num_clients=1901), ["num_clients=1901", "at most the number of client samples (1900)"]),
    (dict(sbn_source="clients"), ["sbn_source='clients'", "all", "server"]),
])
def test_invalid_field_gives_one_line_config_error(changes, must_contain):
    raises_one_line(lambda: smoke(**changes), *must_contain)


def test_validate_on_a_directly_built_config():
    # not only profile(): Config(...).validate() and Config.replace() check too
    raises_one_line(lambda: Config(dataset="cifar10", num_supervised=255).validate(), "num_supervised=255", "(10)")
    raises_one_line(lambda: smoke().replace(rounds=0), "rounds=0")
    # and the boundary values themselves are allowed
    cfg = smoke(active_rate=1.0, threshold=0.0, num_clients=190, partition="dir-0.5")
    assert cfg.num_active == 190


def test_unknown_profile_and_unknown_override():
    raises_one_line(lambda: profile("nope"), "profile='nope'", "paper", "small", "smoke")
    raises_one_line(lambda: profile("paperr"), "did you mean 'paper'")
    raises_one_line(lambda: profile("smoke", local_epoch=2.0), "'local_epoch'", "did you mean 'local_epochs'")


# --------------------------------------------------------------------------- --set parsing
def test_parse_value_unknown_key_suggests_the_closest_field():
    msg = raises_one_line(lambda: parse_value("local_epoch", "2"), "unknown config field 'local_epoch'")
    assert "did you mean 'local_epochs'" in msg
    raises_one_line(lambda: parse_value("treshold", "0.9"), "did you mean 'threshold'")


@pytest.mark.parametrize("name, text, must_contain", [
    ("mix_loss", "maybe", ["mix_loss='maybe'", "must be true or false"]),
    ("rounds", "2.5", ["rounds='2.5'", "must be an integer"]),
    ("rounds", "ten", ["rounds='ten'", "must be an integer"]),
    ("lr", "fast", ["lr='fast'", "must be a number"]),
])
def test_parse_value_bad_text(name, text, must_contain):
    raises_one_line(lambda: parse_value(name, text), *must_contain)


def test_parse_value_converts_to_the_field_type():
    assert parse_value("rounds", "12") == 12 and type(parse_value("rounds", "12")) is int
    assert parse_value("lr", "0.5") == 0.5 and type(parse_value("lr", "1")) is float
    for text, value in [("true", True), ("False", False), ("1", True), ("0", False), ("yes", True),
                        ("off", False)]:
        assert parse_value("mix_loss", text) is value
    assert parse_value("partition", "dir-0.3") == "dir-0.3"


# --------------------------------------------------------------------------- the paper's values
def test_paper_profile_values():
    cfg = profile("paper", "cifar10")
    assert (cfg.lr, cfg.momentum, cfg.weight_decay, cfg.nesterov) == (0.03, 0.9, 5e-4, True)
    assert (cfg.rounds, cfg.local_epochs, cfg.num_clients, cfg.active_rate) == (800, 5, 100, 0.1)
    assert (cfg.global_momentum, cfg.threshold, cfg.mixup_alpha) == (0.5, 0.95, 0.75)
    assert (cfg.client_batch, cfg.server_epochs, cfg.norm, cfg.strong_aug) == (10, 5, "sbn", "semifl")
    assert cfg.num_active == 10
    assert cfg.num_supervised == 250 and cfg.model == "wrn28x2" and cfg.server_batch == 10


def test_paper_table4_model_and_server_batch():
    cfg = profile("paper", "cifar10", num_supervised=4000)
    assert (cfg.model, cfg.server_batch) == ("wrn28x2", 250)
    cfg = profile("paper", "cifar100")
    assert (cfg.num_supervised, cfg.model, cfg.server_batch) == (2500, "wrn28x8", 10)
    cfg = profile("paper", "cifar100", num_supervised=10000)
    assert (cfg.model, cfg.server_batch) == ("wrn28x8", 250)
    cfg = profile("paper", "svhn", num_supervised=1000)
    assert (cfg.model, cfg.server_batch) == ("wrn28x2", 250)
    # an explicit override wins over Table 4
    assert profile("paper", "cifar10", num_supervised=4000, server_batch=64).server_batch == 64


@pytest.mark.parametrize("active_rate, num_clients", [(0.1, 100), (0.3, 10), (0.05, 10), (0.25, 7), (1.0, 13)])
def test_num_active_is_floor_of_c_times_m_at_least_one(active_rate, num_clients):
    cfg = smoke(active_rate=active_rate, num_clients=num_clients)
    assert cfg.num_active == max(math.floor(active_rate * num_clients), 1)


def test_fedavg_fixmatch_profile_switches_off_both_semifl_parts():
    cfg = profile("smoke", algorithm="fedavg-fixmatch")
    assert (cfg.finetune, cfg.global_pseudo_labels, cfg.mix_loss) == (False, False, False)
    raises_one_line(lambda: Config(algorithm="fedavg-fixmatch").validate(), "algorithm='fedavg-fixmatch'")


# --------------------------------------------------------------------------- run key
def test_key_changes_with_results_but_not_with_engine():
    base = smoke()
    assert re.fullmatch(r"[0-9a-f]{12}", base.key())
    assert smoke().key() == base.key()                                   # same config, same key
    for changes in (dict(seed=1), dict(lr=0.01), dict(partition="non-iid-l-2"), dict(sbn_source="server"),
                    dict(mix_loss=False), dict(local_epochs=2.0), dict(global_momentum=0.0)):
        assert base.replace(**changes).key() != base.key(), changes
    assert base.replace(engine="sequential").key() == base.key()
    assert base.replace(engine="vectorized").key() == base.key()
    # an integer given for a float field is that float, Config's own or a method's: one key, one run
    one = base.replace(lr=1, local_epochs=2, fedrs_alpha=1)
    assert one == base.replace(lr=1.0, local_epochs=2.0) and type(one.lr) is type(one.fedrs_alpha) is float
    assert one.key() == base.replace(lr=1.0, local_epochs=2.0, fedrs_alpha=1.0).key() != base.key()


def test_the_long_profile_and_its_notebook_parameters():
    """`long` is `small` with 10x the rounds, evaluated every 10 rounds; a notebook's rounds parameter may not
    contradict it, and bad profiles and rounds are one line each."""
    from semifl_core.config import ConfigError, check_parameters, profile
    small, long = profile("small"), profile("long")
    assert (long.rounds, long.eval_every) == (300, 10)
    assert long.replace(rounds=small.rounds, eval_every=1) == small
    assert profile("long", algorithm="fully-supervised") == profile("small", algorithm="fully-supervised")
    for kwargs, says in ((dict(profile_name="nope"), "profile='nope': allowed are paper, small, long, smoke"),
                         (dict(profile_name="long", rounds=30), "rounds=30 contradicts profile='long'"),
                         (dict(profile_name="small", rounds=0), "rounds=0: must be an integer >= 1"),
                         (dict(profile_name="small", rounds=2.5), "rounds=2.5: must be an integer >= 1")):
        with pytest.raises(ConfigError) as err:
            check_parameters(**kwargs)
        assert str(err.value).startswith(says) and "\n" not in str(err.value)

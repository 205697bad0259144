"""The benchmark times the same work for both engines: the same rounds with the same client samples."""
import numpy as np

from semifl_core.bench import bench
from semifl_core.config import profile


def test_bench_times_both_engines_on_identical_rounds(capsys):
    cfg = profile("smoke", threshold=0.0)   # every sample passes the threshold, so clients do train
    df = bench(cfg, rounds=2, device="cpu", warmup=1)
    seq, vec = df[df.engine == "sequential"], df[df.engine == "vectorized"]
    assert list(seq["round"]) == list(vec["round"]) == [2, 3]
    assert list(seq.client_samples) == list(vec.client_samples) and seq.client_samples.min() > 0
    assert np.all(vec.client_img_per_s > 0) and np.all((df.outside_model_share >= 0) & (df.outside_model_share < 1))
    out = capsys.readouterr().out
    assert "vectorized vs sequential" in out and "1 untimed warm-up rounds" in out

"""Datasets read from their published on-disk formats (written here in miniature), and clear errors otherwise."""
import gzip
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from semifl_core import data as D
from semifl_core.data import DataError, load

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------- writers of the real formats
def write_cifar10(root: Path, sizes=(3, 2, 4, 1, 2), n_test=3):
    """cifar-10-batches-py/data_batch_1..5 and test_batch: pickled dicts, b'data' uint8 (N, 3072) holding the
    1024 red, then green, then blue bytes of each image row by row, b'labels' a list of ints."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batches = {}
    for name, n in [*((f"data_batch_{i + 1}", s) for i, s in enumerate(sizes)), ("test_batch", n_test)]:
        flat = RNG.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = RNG.integers(0, 10, n).tolist()
        d = {b"batch_label": name.encode(), b"labels": labels, b"data": flat,
             b"filenames": [f"img{i}.png".encode() for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(d, protocol=2))
        batches[name] = (flat, labels)
    return batches


def write_cifar100(root: Path, n_train=5, n_test=4):
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    out = {}
    for name, n in (("train", n_train), ("test", n_test)):
        flat = RNG.integers(0, 256, (n, 3072), dtype=np.uint8)
        fine = RNG.integers(20, 100, n).tolist()
        coarse = RNG.integers(0, 20, n).tolist()          # must NOT be used
        d = {b"filenames": [b"x"] * n, b"batch_label": b"", b"fine_labels": fine, b"coarse_labels": coarse,
             b"data": flat}
        (folder / name).write_bytes(pickle.dumps(d, protocol=2))
        out[name] = (flat, fine)
    return out


def write_svhn(root: Path, n_train=12, n_test=5):
    """train_32x32.mat / test_32x32.mat: 'X' uint8 (32, 32, 3, N) (row, col, channel, sample), 'y' (N, 1) with
    digit 0 stored as 10."""
    from scipy.io import savemat
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        X = RNG.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = (np.arange(n) % 10 + 1).astype(np.uint8).reshape(n, 1)   # 1..10, every digit incl. "10" (= 0)
        savemat(str(root / f"{split}_32x32.mat"), {"X": X, "y": y})
        out[split] = (X, y)
    return out


def idx_bytes(array: np.ndarray) -> bytes:
    """idx format: magic 0x00000800 | ndim (0x803 images, 0x801 labels), big-endian uint32 dims, uint8 data."""
    header = struct.pack(">I", 0x00000800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_mnist(root: Path, folder_name="MNIST", n_train=7, n_test=4):
    folder = root / folder_name / "raw"
    folder.mkdir(parents=True)
    arrays = {"train-images-idx3-ubyte": RNG.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": RNG.integers(0, 10, n_train).astype(np.uint8),
              "t10k-images-idx3-ubyte": RNG.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": RNG.integers(0, 10, n_test).astype(np.uint8)}
    for stem, a in arrays.items():
        (folder / f"{stem}.gz").write_bytes(gzip.compress(idx_bytes(a)))
    return folder, arrays


def check_tensors(ds, n_train, n_test, chw):
    assert ds.x_train.dtype == torch.uint8 and ds.x_test.dtype == torch.uint8
    assert tuple(ds.x_train.shape) == (n_train, *chw) and tuple(ds.x_test.shape) == (n_test, *chw)
    assert ds.y_train.dtype == torch.int64 and tuple(ds.y_train.shape) == (n_train,)
    assert tuple(ds.y_test.shape) == (n_test,)


# --------------------------------------------------------------------------- round trips
def test_cifar10_pickles_round_trip(tmp_path):
    batches = write_cifar10(tmp_path)
    ds = load("cifar10", root=tmp_path, download=False)
    check_tensors(ds, 12, 3, (3, 32, 32))
    assert ds.num_classes == 10
    # the training set is data_batch_1..5 in order; byte c*1024 + i*32 + j of a row is channel c, row i, col j
    flat = np.concatenate([batches[f"data_batch_{i}"][0] for i in range(1, 6)])
    labels = sum((batches[f"data_batch_{i}"][1] for i in range(1, 6)), [])
    for n, c, i, j in [(0, 0, 0, 0), (0, 1, 0, 5), (4, 2, 31, 0), (11, 1, 17, 30), (7, 2, 5, 9)]:
        assert ds.x_train[n, c, i, j].item() == flat[n, c * 1024 + i * 32 + j]
    assert ds.y_train.tolist() == labels
    test_flat, test_labels = batches["test_batch"]
    assert ds.x_test[2, 2, 31, 31].item() == test_flat[2, 3071]
    assert ds.x_test[1, 0, 0, 1].item() == test_flat[1, 1]
    assert ds.y_test.tolist() == test_labels
    assert np.array_equal(ds.x_test.reshape(3, -1).numpy(), test_flat)


def test_cifar10_published_tarball_is_unpacked(tmp_path):
    src = tmp_path / "src"
    batches = write_cifar10(src)
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as tar:
        tar.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    ds = load("cifar10", root=tmp_path, download=False)
    assert np.array_equal(ds.x_test.reshape(3, -1).numpy(), batches["test_batch"][0])
    assert ds.y_test.tolist() == batches["test_batch"][1]


def test_cifar100_uses_fine_labels(tmp_path):
    out = write_cifar100(tmp_path)
    ds = load("cifar100", root=tmp_path, download=False)
    check_tensors(ds, 5, 4, (3, 32, 32))
    assert ds.num_classes == 100
    assert ds.y_train.tolist() == out["train"][1] and ds.y_test.tolist() == out["test"][1]
    flat = out["train"][0]
    assert ds.x_train[3, 1, 2, 3].item() == flat[3, 1024 + 2 * 32 + 3]
    assert np.array_equal(ds.x_train.reshape(5, -1).numpy(), flat)


def test_svhn_mat_round_trip_and_label_10_is_digit_0(tmp_path):
    out = write_svhn(tmp_path)
    ds = load("svhn", root=tmp_path, download=False)
    check_tensors(ds, 12, 5, (3, 32, 32))
    X, y = out["train"]
    for n, c, i, j in [(0, 0, 0, 0), (3, 2, 10, 20), (11, 1, 31, 0), (5, 0, 0, 31)]:
        assert ds.x_train[n, c, i, j].item() == X[i, j, c, n]          # X is (row, col, channel, sample)
    assert np.array_equal(ds.x_train.numpy(), X.transpose(3, 2, 0, 1))
    expected = [int(v) % 10 for v in y[:, 0]]
    assert ds.y_train.tolist() == expected
    assert ds.y_train[9].item() == 0 and int(y[9, 0]) == 10              # stored 10 -> digit 0
    assert set(ds.y_train.tolist()) == set(range(10))
    assert ds.y_test.tolist() == [int(v) % 10 for v in out["test"][1][:, 0]]
    assert not ds.flip                                                  # digits are never mirrored


@pytest.mark.parametrize("name, folder_name", [("mnist", "MNIST"), ("fashionmnist", "FashionMNIST")])
def test_idx_gz_round_trip(tmp_path, name, folder_name):
    _, arrays = write_mnist(tmp_path, folder_name)
    ds = load(name, root=tmp_path, download=False)
    check_tensors(ds, 7, 4, (1, 28, 28))
    assert np.array_equal(ds.x_train[:, 0].numpy(), arrays["train-images-idx3-ubyte"])
    assert ds.x_train[6, 0, 27, 3].item() == arrays["train-images-idx3-ubyte"][6, 27, 3]
    assert ds.x_test[1, 0, 0, 27].item() == arrays["t10k-images-idx3-ubyte"][1, 0, 27]
    assert ds.y_train.tolist() == arrays["train-labels-idx1-ubyte"].tolist()
    assert ds.y_test.tolist() == arrays["t10k-labels-idx1-ubyte"].tolist()


def test_read_idx_plain_and_gzipped(tmp_path):
    a = RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    raw = idx_bytes(a)
    assert raw[:4] == b"\x00\x00\x08\x03" and struct.unpack(">III", raw[4:16]) == (3, 28, 28)
    (tmp_path / "img").write_bytes(raw)
    (tmp_path / "img.gz").write_bytes(gzip.compress(raw))
    assert np.array_equal(D.read_idx(tmp_path / "img"), a) and np.array_equal(D.read_idx(tmp_path / "img.gz"), a)
    labels = np.array([1, 2, 3], dtype=np.uint8)
    (tmp_path / "lab").write_bytes(idx_bytes(labels))
    assert idx_bytes(labels)[:8] == b"\x00\x00\x08\x01\x00\x00\x00\x03"
    assert np.array_equal(D.read_idx(tmp_path / "lab"), labels)
    (tmp_path / "float").write_bytes(b"\x00\x00\x0d\x01" + raw[4:])          # type 0x0D (float): not uint8
    with pytest.raises(ValueError, match="not an idx uint8 file"):
        D.read_idx(tmp_path / "float")


# --------------------------------------------------------------------------- missing files
@pytest.mark.parametrize("name, where, files", [
    ("cifar10", "cifar-10-batches-py", ["data_batch_1", "test_batch", "cifar-10-python.tar.gz"]),
    ("cifar100", "cifar-100-python", ["train", "test"]),
    ("svhn", "train_32x32.mat", ["test_32x32.mat"]),
    ("mnist", "MNIST/raw", ["train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]),
])
def test_missing_files_without_download_say_where_to_put_which_file(tmp_path, monkeypatch, name, where, files):
    monkeypatch.setattr(D, "_download", lambda *a: pytest.fail("download=False must not download"))
    with pytest.raises(DataError) as info:
        load(name, root=tmp_path, download=False)
    msg = str(info.value)
    assert "\n" not in msg and "not found" in msg
    assert f"{tmp_path}/{where}" in msg
    for f in files:
        assert f in msg


def test_missing_files_with_failing_download_is_a_data_error(tmp_path, monkeypatch):
    monkeypatch.delenv("SEMIFL_OFFLINE", raising=False)
    calls = []

    def offline(name, root):
        calls.append((name, Path(root)))
        raise OSError("network is unreachable")

    monkeypatch.setattr(D, "_download", offline)
    with pytest.raises(DataError) as info:
        load("mnist", root=tmp_path, download=True)
    assert calls == [("mnist", tmp_path)]
    msg = str(info.value)
    assert "download failed" in msg and "OSError" in msg and f"{tmp_path}/MNIST/raw" in msg and "\n" not in msg


def test_download_then_read(tmp_path, monkeypatch):
    """A download that puts the files in place is followed by reading them."""
    monkeypatch.delenv("SEMIFL_OFFLINE", raising=False)
    written = {}
    monkeypatch.setattr(D, "_download", lambda name, root: written.update(write_mnist(Path(root))[1]))
    ds = load("mnist", root=tmp_path, download=True)
    assert np.array_equal(ds.x_test[:, 0].numpy(), written["t10k-images-idx3-ubyte"])


def test_semifl_offline_env_turns_download_off(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMIFL_OFFLINE", "1")
    monkeypatch.setattr(D, "_download", lambda *a: pytest.fail("SEMIFL_OFFLINE=1 must not download"))
    with pytest.raises(DataError, match="not found"):
        load("cifar10", root=tmp_path, download=True)


# --------------------------------------------------------------------------- corrupt files
def corrupt_idx_truncated(root):
    folder, arrays = write_mnist(root)
    raw = idx_bytes(arrays["train-images-idx3-ubyte"])
    (folder / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(raw[:-100]))   # header says more


def corrupt_gzip_cut(root):
    folder, _ = write_mnist(root)
    path = folder / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:15])


def corrupt_idx_magic(root):
    folder, _ = write_mnist(root)
    path = folder / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(b"\x12\x34" + gzip.decompress(path.read_bytes())[2:]))


def corrupt_label_count(root):
    folder, arrays = write_mnist(root)
    (folder / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(np.zeros(3, np.uint8))))


def corrupt_pickle_garbage(root):
    write_cifar10(root)
    (root / "cifar-10-batches-py" / "data_batch_3").write_bytes(b"this is not a pickle")


def corrupt_pickle_not_a_dict(root):
    write_cifar10(root)
    (root / "cifar-10-batches-py" / "test_batch").write_bytes(pickle.dumps([1, 2, 3]))


def corrupt_mat(root):
    write_svhn(root)
    path = root / "train_32x32.mat"
    path.write_bytes(path.read_bytes()[:300])


@pytest.mark.parametrize("name, make", [
    ("mnist", corrupt_idx_truncated), ("mnist", corrupt_gzip_cut), ("mnist", corrupt_idx_magic),
    ("mnist", corrupt_label_count), ("cifar10", corrupt_pickle_garbage), ("cifar10", corrupt_pickle_not_a_dict),
    ("svhn", corrupt_mat),
])
def test_corrupt_files_give_a_data_error(tmp_path, monkeypatch, name, make):
    make(tmp_path)
    monkeypatch.setattr(D, "_download", lambda *a: pytest.fail("a corrupt file is not a missing file"))
    with pytest.raises(DataError, match="corrupt") as info:
        load(name, root=tmp_path, download=True)
    assert str(tmp_path) in str(info.value)


# --------------------------------------------------------------------------- dataset facts
def test_normalisation_and_flip_per_dataset():
    def ds(name):
        return D.Dataset(name, *(torch.zeros(1),) * 4, 10)

    assert ds("cifar10").mean == (0.4914, 0.4822, 0.4465) and ds("cifar10").std == (0.2023, 0.1994, 0.2010)
    assert ds("cifar100").mean == (0.5071, 0.4865, 0.4409) and ds("cifar100").std == (0.2673, 0.2564, 0.2762)
    assert ds("svhn").mean == (0.4377, 0.4438, 0.4728) and ds("svhn").std == (0.1980, 0.2010, 0.1970)
    assert ds("mnist").mean == (0.1307,) and ds("mnist").std == (0.3081,)
    assert ds("fashionmnist").mean == (0.2860,) and ds("fashionmnist").std == (0.3530,)
    assert [ds(n).flip for n in ("cifar10", "cifar100", "fashionmnist", "svhn", "mnist")] == \
        [True, True, True, False, False]


REAL_FASHION = Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")


@pytest.mark.skipif(not REAL_FASHION.exists(), reason="Debian package dataset-fashion-mnist not installed")
def test_real_fashion_mnist_from_the_debian_package(tmp_path):
    ds = load("fashionmnist", root=tmp_path, download=False)       # nothing in tmp_path: the Debian copy
    check_tensors(ds, 60000, 10000, (1, 28, 28))
    assert ds.num_classes == 10
    assert torch.bincount(ds.y_train).tolist() == [6000] * 10      # Fashion-MNIST is balanced
    assert torch.bincount(ds.y_test).tolist() == [1000] * 10
    assert ds.x_train.max().item() == 255 and ds.x_train.min().item() == 0


def test_synthetic_is_deterministic_and_learnable():
    a, b = load("synthetic"), D.synthetic()
    for t in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(a, t), getattr(b, t))
    check_tensors(a, 2000, 500, (3, 16, 16))
    assert torch.bincount(a.y_train).tolist() == [200] * 10
    # nearest class mean (raw pixels) fit on train classifies the test set far above chance
    x, xt = a.x_train.float().flatten(1), a.x_test.float().flatten(1)
    means = torch.stack([x[a.y_train == c].mean(0) for c in range(10)])
    acc = (torch.cdist(xt, means).argmin(1) == a.y_test).float().mean().item()
    assert acc > 0.8


def test_a_torchvision_built_for_another_torch_is_named_in_one_line(monkeypatch):
    """torch_check's line names both versions and a fix from torch's own build family; the download path raises it
    instead of a traceback when torchvision cannot be imported."""
    import subprocess
    from types import SimpleNamespace

    from semifl_core import data, torch_check
    monkeypatch.setattr(torch_check, "versions", lambda: ("2.13.0+cpu", "0.28.0"))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(
        returncode=1, stderr="Traceback ...\nRuntimeError: operator torchvision::nms does not exist\n"))
    line = torch_check.problem()
    assert "\n" not in line and "torch 2.13.0+cpu and torchvision 0.28.0" in line and "torchvision::nms" in line
    assert "torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cpu" in line
    assert torch_check.fix_command("2.14.1", "0.29.1+cu128").endswith("(the build for torch 2.14.1)")
    import builtins
    real = builtins.__import__

    def broken(name, *args, **kwargs):
        if name.startswith("torchvision"):
            raise RuntimeError("operator torchvision::nms does not exist")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(RuntimeError) as err:
        data._download("fashionmnist", Path("/nonexistent"))
    assert str(err.value) == line

"""Datasets as uint8 image tensors (N, C, H, W) on the training device, loaded once.

Files are read in their published formats (CIFAR python pickles, SVHN .mat, idx .gz); torchvision downloads missing
ones when online; Fashion-MNIST also from Debian's `dataset-fashion-mnist` package (/usr/share/datasets/fashion-mnist/).
"""
from __future__ import annotations

import gzip
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

# mean/std of the authors' code, per channel
NORMALIZATION = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "svhn": ((0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970)),
    "mnist": ((0.1307,), (0.3081,)),
    "fashionmnist": ((0.2860,), (0.3530,)),
    "synthetic": ((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),
}
CLASS_NAMES = {"fashionmnist": ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                                 "Bag", "Ankle boot"),
               "cifar10": ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")}
NO_FLIP = ("svhn", "mnist")  # digits change meaning when mirrored
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


class DataError(RuntimeError):
    """A dataset's files are missing or corrupt. The message says where to put which file."""


@dataclass
class Dataset:
    name: str
    x_train: torch.Tensor  # uint8 (N, C, H, W)
    y_train: torch.Tensor  # int64 (N,)
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int

    @property
    def mean(self) -> tuple[float, ...]:
        return NORMALIZATION[self.name][0]

    @property
    def std(self) -> tuple[float, ...]:
        return NORMALIZATION[self.name][1]

    @property
    def class_names(self) -> tuple[str, ...]:
        return CLASS_NAMES.get(self.name, tuple(str(k) for k in range(self.num_classes)))

    @property
    def flip(self) -> bool:
        return self.name not in NO_FLIP

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])

    def to(self, device) -> "Dataset":
        move = lambda t: t.to(device)
        return Dataset(self.name, move(self.x_train), move(self.y_train), move(self.x_test), move(self.y_test),
                       self.num_classes)


def data_root(root: str | os.PathLike | None = None) -> Path:
    return Path(root or os.environ.get("SEMIFL_DATA") or "./data")


def load(name: str, root=None, device="cpu", download: bool = True) -> Dataset:
    """Load a dataset onto `device`; missing files are downloaded unless download=False or SEMIFL_OFFLINE=1."""
    root = data_root(root)
    download = download and os.environ.get("SEMIFL_OFFLINE", "0") in ("", "0")
    if name == "synthetic":
        return synthetic().to(device)
    reader = {"cifar10": _cifar, "cifar100": _cifar, "svhn": _svhn, "mnist": _mnist, "fashionmnist": _mnist}[name]
    try:
        arrays = _read(reader, name, root)
    except FileNotFoundError:
        if not download:
            raise DataError(_missing_message(name, root)) from None
        try:
            _download(name, root)
        except Exception as err:  # offline, proxy, disk full: one clear line with the underlying reason
            why = " ".join(str(err).split())[:300] or "no message"
            raise DataError(f"{_missing_message(name, root)}; the download failed ({type(err).__name__}: {why}); "
                            "fetch those files on a machine that is online and copy them there") from None
        try:
            arrays = _read(reader, name, root)
        except FileNotFoundError:
            raise DataError(f"{_missing_message(name, root)} (still missing after the download)") from None
    x_train, y_train, x_test, y_test = (torch.from_numpy(np.array(a)) for a in arrays)
    num_classes = 100 if name == "cifar100" else 10
    return Dataset(name, x_train, y_train.long(), x_test, y_test.long(), num_classes).to(device)


# what a reader raises on a file that is there but unreadable (a garbage pickle can raise almost anything)
_CORRUPT = (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, ImportError,
            pickle.UnpicklingError)


def _read(reader, name: str, root: Path):
    """The reader's (x_train, y_train, x_test, y_test). FileNotFoundError passes through (missing files); a file that is
    there but unreadable, or images and labels of different counts, is a DataError."""
    def corrupt(why):
        return DataError(f"{name}: dataset files under {root} are corrupt ({why}); delete them and load again")

    try:
        arrays = reader(name, root)
    except FileNotFoundError:
        raise
    except _CORRUPT as err:
        raise corrupt(f"{type(err).__name__}: {err}") from None
    for split, x, y in (("train", arrays[0], arrays[1]), ("test", arrays[2], arrays[3])):
        if len(x) != len(y):
            raise corrupt(f"the {split} split has {len(x)} images but {len(y)} labels")
    return arrays


def _missing_message(name: str, root: Path) -> str:
    where = {
        "cifar10": f"{root}/cifar-10-batches-py/ (data_batch_1..5, test_batch) or cifar-10-python.tar.gz in {root}/",
        "cifar100": f"{root}/cifar-100-python/ (train, test) or cifar-100-python.tar.gz in {root}/",
        "svhn": f"{root}/train_32x32.mat and {root}/test_32x32.mat",
        "mnist": f"{root}/MNIST/raw/ (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                 "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)",
        "fashionmnist": f"{root}/FashionMNIST/raw/ or {DEBIAN_FASHION_MNIST}/ (apt-get install dataset-fashion-mnist): "
                        "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
                        "t10k-labels-idx1-ubyte.gz",
    }[name]
    return f"{name}: dataset files not found; put them in {where} (data root: --data-root or SEMIFL_DATA)"


def _download(name: str, root: Path) -> None:
    try:
        import torchvision.datasets as tvd
    except Exception:   # torchvision built for another torch: the one line torch_check gives, not a traceback
        from .torch_check import problem
        raise RuntimeError(problem() or "torchvision cannot be imported") from None
    root.mkdir(parents=True, exist_ok=True)
    if name == "svhn":
        for split in ("train", "test"):
            tvd.SVHN(str(root), split=split, download=True)
        return
    cls = {"cifar10": tvd.CIFAR10, "cifar100": tvd.CIFAR100, "mnist": tvd.MNIST, "fashionmnist": tvd.FashionMNIST}
    for train in (True, False):
        cls[name](str(root), train=train, download=True)


# ---------------------------------------------------------------------- on-disk formats
def _cifar(name: str, root: Path):
    folder = root / ("cifar-10-batches-py" if name == "cifar10" else "cifar-100-python")
    if name == "cifar10":
        train_files, test_files, key = [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels"
    else:
        train_files, test_files, key = ["train"], ["test"], b"fine_labels"
    tarball = root / ("cifar-10-python.tar.gz" if name == "cifar10" else "cifar-100-python.tar.gz")
    if not folder.exists() and tarball.exists():  # the published archive, as downloaded: unpack it once
        import tarfile
        try:
            with tarfile.open(tarball) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(root, filter="data")
                else:
                    tar.extractall(root)
        except tarfile.TarError as err:
            raise ValueError(f"{tarball.name}: {err}") from None

    def read(files):
        xs, ys = [], []
        for f in files:
            with open(folder / f, "rb") as fh:
                d = pickle.load(fh, encoding="bytes")
            if not isinstance(d, dict):
                raise ValueError(f"{f} holds a {type(d).__name__}, not a dict")
            xs.append(np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(d[key], dtype=np.int64))
        return np.concatenate(xs), np.concatenate(ys)

    return (*read(train_files), *read(test_files))


def _svhn(name: str, root: Path):
    from scipy.io import loadmat

    def read(split):
        path = root / f"{split}_32x32.mat"
        if not path.exists():
            raise FileNotFoundError(path)
        try:
            m = loadmat(str(path))
        except FileNotFoundError:
            raise
        except Exception as err:  # scipy's MatReadError is no ValueError
            raise ValueError(f"{path.name}: {type(err).__name__}: {err}") from None
        x = np.transpose(m["X"], (3, 2, 0, 1))            # (32, 32, 3, N) -> (N, 3, 32, 32)
        y = m["y"].astype(np.int64).reshape(-1) % 10      # digit 0 is stored as label 10
        return x, y

    return (*read("train"), *read("test"))  # train split only: no `extra`, as in the paper


def read_idx(path: Path) -> np.ndarray:
    """An idx file (optionally gzipped): big-endian magic (0, 0, type 0x08, ndim), dims, uint8 data."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path.name} is not an idx uint8 file")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4).astype(int)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path.name} holds {data.size} bytes of data, its header says {int(np.prod(dims))}")
    return data.reshape(dims)


def _mnist(name: str, root: Path):
    folders = [root / ("MNIST" if name == "mnist" else "FashionMNIST") / "raw"]
    if name == "fashionmnist":
        folders.append(DEBIAN_FASHION_MNIST)

    def find(stem):
        for folder in folders:
            for path in (folder / f"{stem}.gz", folder / stem):
                if path.exists():
                    return path
        raise FileNotFoundError(stem)

    x_tr, y_tr, x_te, y_te = (read_idx(find(s)) for s in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
    return x_tr[:, None], y_tr.astype(np.int64), x_te[:, None], y_te.astype(np.int64)


# ---------------------------------------------------------------------- synthetic
def synthetic(n_train: int = 2000, n_test: int = 500, num_classes: int = 10, size: int = 16) -> Dataset:
    """Tiny 3x16x16 images with learnable class structure (a smooth per-class pattern, random contrast and brightness,
    pixel noise), always the same (fixed generator)."""
    g = torch.Generator().manual_seed(12345)
    protos = torch.rand(num_classes, 3, 4, 4, generator=g)
    protos = torch.nn.functional.interpolate(protos, size=(size, size), mode="bilinear", align_corners=False)

    def draw(n):
        y = torch.arange(n) % num_classes
        y = y[torch.randperm(n, generator=g)]
        contrast = 0.6 + 0.4 * torch.rand(n, 1, 1, 1, generator=g)
        bright = 0.2 * torch.rand(n, 1, 1, 1, generator=g) - 0.1
        x = (protos[y] - 0.5) * contrast + 0.5 + bright + 0.12 * torch.randn(n, 3, size, size, generator=g)
        return (x.clamp(0, 1) * 255).round().to(torch.uint8), y

    x_tr, y_tr = draw(n_train)
    x_te, y_te = draw(n_test)
    return Dataset("synthetic", x_tr, y_tr, x_te, y_te, num_classes)

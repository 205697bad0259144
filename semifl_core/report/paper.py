"""The paper's published numbers and names, quoted from Diao, Ding & Tarokh, "SemiFL: Semi-Supervised Federated
Learning for Unlabeled Clients with Alternate Training", NeurIPS 2022: Tables 1-5, its partitions and datasets. The
end of the module holds FedDure's Table 1 (Bai et al., AAAI 2024), labeled as FedDure's.

Everything here is THE PAPER'S (CIFAR-10 / SVHN / CIFAR-100, WResNet, 800 rounds), never a result of this package.
Values are strings "mean(std)" exactly as printed (the paper's parentheses hold standard errors over 4 seeds);
`value()` turns one into a float. A row of our methods is keyed by its name in methods.METHODS; rows the package does
not run (FedMatch, FedRGD, the centralized SSL methods) by the paper's name."""
from __future__ import annotations

import math
import re

from ..methods import (CBAFED, CBAFED_LOWER, CBAFED_UPPER, FEDAVG_FIXMATCH_CLIENTS, FEDAVG_LABELED, FEDAVG_SL,
                       FEDAVG_SUPERVISED, FEDDURE, FULLY_SUPERVISED, PARTIALLY_SUPERVISED, SEMIFL)

DATASET_NAMES = {"cifar10": "CIFAR-10", "svhn": "SVHN", "cifar100": "CIFAR-100",
                 "fashionmnist": "Fashion-MNIST", "mnist": "MNIST", "synthetic": "synthetic"}
# The (dataset, N_S) columns of Table 1, in the paper's order.
TABLE1_COLUMNS = [("cifar10", 250), ("cifar10", 4000), ("svhn", 250), ("svhn", 1000), ("cifar100", 2500),
                  ("cifar100", 10000)]
PARTITIONS = ("non-iid-l-2", "dir-0.1", "dir-0.3", "iid")   # Table 1's order
PARTITION_NAMES = {"non-iid-l-2": "Non-IID, K=2", "dir-0.1": "Non-IID, Dir(0.1)", "dir-0.3": "Non-IID, Dir(0.3)",
                   "iid": "IID"}
NON_IID_K2, IID = PARTITIONS[0], PARTITIONS[-1]
ABLATION_PARTITIONS = (NON_IID_K2, IID)   # the partitions of the ablations (Tables 2, 3 and 5)


def _row(text: str) -> list[str]:
    return text.split()


# Table 1. Rows without a partition are centralized; (method, partition) rows are federated.
# Fully Supervised and HeteroFL have one number per dataset (they do not depend on N_S).
TABLE1_BASELINE = {
    FULLY_SUPERVISED: dict(zip(["cifar10", "svhn", "cifar100"], _row("95.3(0.1) 97.3(0.0) 79.3(0.1)"))),
    PARTIALLY_SUPERVISED: dict(zip(TABLE1_COLUMNS,
                                   _row("42.4(1.8) 76.9(0.2) 77.1(2.9) 90.4(0.5) 27.2(0.7) 59.3(0.1)"))),
}
TABLE1_SSL = {  # centralized SSL methods (the paper's reference rows; not federated)
    "Pi-Model": "45.7(4.0) 86.0(0.4) 81.0(1.9) 92.5(0.4) 42.8(0.5) 62.1(0.1)",
    "Pseudo-Labeling": "50.2(0.4) 83.9(0.3) 79.8(1.1) 90.1(0.6) 42.6(0.5) 63.8(0.2)",
    "Mean Teacher": "67.7(2.3) 90.8(0.2) 96.4(0.1) 96.6(0.1) 46.1(0.6) 64.2(0.2)",
    "MixMatch": "89.0(0.9) 93.6(0.1) 96.0(0.2) 96.5(0.3) 60.1(0.4) 71.7(0.3)",
    "UDA": "91.2(1.1) 95.1(0.2) 94.3(2.8) 97.5(0.2) 66.9(0.2) 75.5(0.3)",
    "ReMixMatch": "94.6(0.1) 95.3(0.1) 97.1(0.5) 97.4(0.1) 72.6(0.3) 77.0(0.6)",
    "FixMatch": "94.9(0.7) 95.7(0.1) 97.5(0.4) 97.7(0.1) 71.7(0.1) 77.4(0.1)",
}
TABLE1_SSL = {k: dict(zip(TABLE1_COLUMNS, _row(v))) for k, v in TABLE1_SSL.items()}
# HeteroFL (supervised FL, fully labeled clients; our fedavg-supervised): one number per dataset.
TABLE1_HETEROFL = {
    "non-iid-l-2": "51.5(3.6) 72.3(4.4) 3.1(0.3)",
    "dir-0.1": "85.0(0.6) 95.8(0.1) 74.0(0.4)",
    "dir-0.3": "91.6(0.1) 96.8(0.0) 76.9(0.1)",
    "iid": "94.3(0.1) 97.5(0.0) 77.8(0.2)",
}
TABLE1_HETEROFL = {p: dict(zip(["cifar10", "svhn", "cifar100"], _row(v))) for p, v in TABLE1_HETEROFL.items()}
TABLE1_SSFL = {  # (method, partition) -> {(dataset, N_S): "mean(std)"}
    ("FedMatch", "non-iid-l-2"): "41.3(1.1) 58.3(1.0) 58.2(3.1) 84.3(1.0) 17.7(0.5) 30.5(0.8)",
    ("FedRGD", "non-iid-l-2"): "32.7(3.6) 48.9(1.4) 21.2(2.2) 21.6(2.3) 13.8(1.4) 26.5(3.0)",
    (SEMIFL, "non-iid-l-2"): "60.0(0.9) 85.3(0.3) 87.5(1.1) 92.2(0.8) 35.2(0.3) 62.1(0.4)",
    ("FedMatch", "dir-0.1"): "41.6(1.0) 58.9(0.7) 58.4(3.4) 84.3(0.6) 17.5(0.5) 30.8(0.6)",
    ("FedRGD", "dir-0.1"): "31.5(2.9) 45.2(0.8) 20.0(4.0) 23.8(3.4) 13.4(1.3) 23.6(2.6)",
    (SEMIFL, "dir-0.1"): "63.0(0.6) 84.5(0.4) 91.2(0.3) 93.0(0.5) 49.0(1.0) 68.0(0.2)",
    ("FedMatch", "dir-0.3"): "41.2(1.1) 58.4(0.6) 59.1(2.8) 84.0(1.1) 17.8(0.4) 31.1(0.5)",
    ("FedRGD", "dir-0.3"): "32.5(3.0) 46.9(1.6) 24.8(5.1) 22.0(3.9) 13.1(2.0) 23.8(1.9)",
    (SEMIFL, "dir-0.3"): "71.9(1.2) 88.9(0.3) 94.0(0.5) 95.2(0.2) 54.9(1.4) 70.0(0.3)",
    ("FedMatch", "iid"): "41.7(1.1) 58.6(0.5) 58.6(3.0) 84.3(0.9) 17.6(0.3) 31.3(1.0)",
    ("FedRGD", "iid"): "33.2(1.9) 47.8(1.7) 21.3(6.5) 20.7(1.1) 13.3(1.4) 23.8(2.6)",
    (SEMIFL, "iid"): "88.2(0.3) 93.1(0.1) 96.8(0.3) 96.9(0.1) 61.3(1.2) 72.1(0.2)",
}
TABLE1_SSFL = {k: dict(zip(TABLE1_COLUMNS, _row(v))) for k, v in TABLE1_SSFL.items()}

# Table 2 (CIFAR-10, N_S=4000): a baseline or (finetune, global_pseudo_labels) -> {partition: accuracy}
TABLE2_DATASET = ("cifar10", 4000)
TABLE2 = {
    FULLY_SUPERVISED: {"non-iid-l-2": "95.33", "iid": "95.33"},
    PARTIALLY_SUPERVISED: {"non-iid-l-2": "76.92", "iid": "76.92"},
    (False, False): {"non-iid-l-2": "41.01", "iid": "40.26"},   # "FedAvg + FixMatch"
    (False, True): {"non-iid-l-2": "48.89", "iid": "47.03"},
    (True, False): {"non-iid-l-2": "80.42", "iid": "81.70"},
    (True, True): {"non-iid-l-2": "85.34", "iid": "93.10"},     # SemiFL
}

# Table 3 (CIFAR-10): sbn_source -> {(N_S, partition): accuracy}
TABLE3 = {
    "server": {(250, "non-iid-l-2"): "60.0(0.8)", (250, "iid"): "86.3(0.2)",
               (4000, "non-iid-l-2"): "85.5(0.1)", (4000, "iid"): "93.1(0.2)"},
    "all": {(250, "non-iid-l-2"): "60.0(0.9)", (250, "iid"): "88.2(0.3)",
            (4000, "non-iid-l-2"): "85.3(0.3)", (4000, "iid"): "93.1(0.1)"},
}

# Table 4 (hyperparameters), shared by all (dataset, N_S) unless listed per column.
TABLE4_ARCH = {"cifar10": "WResNet28x2", "svhn": "WResNet28x2", "cifar100": "WResNet28x8"}
TABLE4_SERVER_BATCH = {("cifar10", 250): 10, ("cifar10", 4000): 250, ("svhn", 250): 10, ("svhn", 1000): 250,
                       ("cifar100", 2500): 10, ("cifar100", 10000): 250}
TABLE4_COMMON = {"server_epochs": 5, "client_batch": 10, "local_epochs": 5, "optimizer": "SGD", "lr": 3.0e-2,
                 "weight_decay": 5.0e-4, "momentum": 0.9, "nesterov": True, "rounds": 800,
                 "global_momentum": 0.5, "scheduler": "Cosine Annealing",
                 # from the text of Section 4 and Appendix C.1
                 "num_clients": 100, "active_rate": 0.1, "threshold": 0.95, "mixup_alpha": 0.75}

# Table 5 (CIFAR-10, N_S=4000): (E, beta_g, mixup) -> {partition: accuracy}
TABLE5_DATASET = ("cifar10", 4000)
TABLE5 = {
    (1, 0.5, True): {"non-iid-l-2": "83.4(0.5)", "iid": "88.9(0.3)"},
    (5, 0.5, False): {"non-iid-l-2": "84.2(0.4)", "iid": "91.3(0.2)"},
    (5, 0.0, True): {"non-iid-l-2": "85.4(0.6)", "iid": "92.4(0.1)"},
    (5, 0.5, True): {"non-iid-l-2": "85.3(0.3)", "iid": "93.1(0.1)"},
}


def value(text) -> float:
    """'60.0(0.9)' -> 60.0; None/'' -> nan."""
    if text is None or text == "":
        return math.nan
    m = re.match(r"\s*([-0-9.]+)", str(text))
    return float(m.group(1)) if m else math.nan


def label(dataset: str, num_supervised: int | None = None) -> str:
    """Column header for the paper's numbers, e.g. 'paper (CIFAR-10, N_S=250)'."""
    name = DATASET_NAMES.get(dataset, dataset)
    return f"paper ({name})" if num_supervised is None else f"paper ({name}, N_S={num_supervised})"


def table1(method: str, partition: str | None, dataset: str, num_supervised: int) -> str | None:
    """The paper's Table 1 entry for a method (FULLY_SUPERVISED, PARTIALLY_SUPERVISED, FEDAVG_SUPERVISED: the paper's
    HeteroFL row, SEMIFL, 'FedMatch', 'FedRGD', or an SSL method name) at (dataset, N_S); None if the paper has none."""
    if method == FULLY_SUPERVISED:
        return TABLE1_BASELINE[method].get(dataset)
    if method == PARTIALLY_SUPERVISED:
        return TABLE1_BASELINE[method].get((dataset, num_supervised))
    if method in TABLE1_SSL:
        return TABLE1_SSL[method].get((dataset, num_supervised))
    if method == FEDAVG_SUPERVISED:
        return TABLE1_HETEROFL.get(partition, {}).get(dataset)
    return TABLE1_SSFL.get((method, partition), {}).get((dataset, num_supervised))


def paper_column_for(dataset: str, num_supervised: int) -> tuple[str, int]:
    """The paper's (dataset, N_S) beside ours: the same pair if it has it, else CIFAR-10 at the closest N_S."""
    if (dataset, num_supervised) in TABLE1_COLUMNS:
        return dataset, num_supervised
    return "cifar10", min((250, 4000), key=lambda n: abs(math.log(n) - math.log(max(num_supervised, 1))))


# How many runs each paper's cell averages, as the paper says: SemiFL "conduct[s] four random experiments for all the
# datasets with different seeds, and the standard errors are shown inside the parentheses" (Section 5); FedDure's
# Table 1 is the mean of three runs, printed without spread; CBAFed's Table 1 prints one number a cell, no n given.
SEMIFL_RUNS, FEDDURE_RUNS, CBAFED_RUNS = 4, 3, None


# ---------------------------------------------------------------------- FedDure (AAAI 2024), Table 1
# FedDure's (labeled, unlabeled) partitions: (IID, IID), (IID, DIR), (DIR, DIR), Dirichlet 0.5; K=100 clients, 5 a
# round, 200 rounds, ResNet-9; mean of 3 runs, printed without spread.
FEDDURE_SETTINGS = (("iid", "iid"), ("iid", "dir-0.5"), ("dir-0.5", "dir-0.5"))
FEDDURE_SETTING_NAMES = {("iid", "iid"): "(IID, IID)", ("iid", "dir-0.5"): "(IID, DIR)",
                         ("dir-0.5", "dir-0.5"): "(DIR, DIR)"}
FEDDURE_TABLE1 = {   # Fashion-MNIST, in FEDDURE_SETTINGS order
    FEDDURE: _row("88.69 88.21 86.96"),
    FEDAVG_LABELED: _row("85.56 84.84 82.24"),
    FEDAVG_FIXMATCH_CLIENTS: _row("86.46 85.42 81.07"),
    FEDAVG_SL: _row("89.87 88.60 86.95"),
}


def feddure_table1(method: str, setting: tuple) -> str | None:
    """FedDure's Table 1 (Fashion-MNIST) entry for a method and (labeled, unlabeled) setting; None if it has none."""
    row = FEDDURE_TABLE1.get(method)
    return row[FEDDURE_SETTINGS.index(setting)] if row and setting in FEDDURE_SETTINGS else None


# ---------------------------------------------------------------------- CBAFed (CVPR 2023), Table 1
# Fashion-MNIST column: one labeled client and nine unlabeled ones (Dirichlet 0.8), ResNet-18 at 32x32, 501 warm-up
# epochs and 501 rounds; one number per cell (no spread printed). The lower-bound row we run keeps CBAFed's residual
# weight connection, which is their "FedAvg+" row (78.26); their plain lower bound (no residual) is 74.87.
CBAFED_TABLE1 = {CBAFED: "85.49", CBAFED_LOWER: "78.26 (FedAvg+: with residual; 74.87 without)",
                 CBAFED_UPPER: "90.14"}
CBAFED_PAPER_ONLY = {"RSCFed (paper only, not run)": "78.40", "Fed-Consist+ (paper only, not run)": "78.35",
                     "FedIRM (paper only, not run)": "76.83"}

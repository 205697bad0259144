"""Write the notebooks of this folder (without outputs) from the cell texts below: `python build_notebooks.py`.

Every notebook has the same skeleton: a title, a `parameters` cell (papermill), a setup cell that prints the
profile, data and device, the runs (shared configs from semifl_core.report, so notebooks reuse each other's runs),
the table(s) with the paper's numbers beside ours, figure(s) saved to figures_dir, and LAST a claims table.
Cells whose first line is `# NBVAL_CHECK_OUTPUT` have outputs that are reproducible on re-execution (runs reused).
"""
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from semifl_core import report

HERE = Path(__file__).resolve().parent
CHECK = "# NBVAL_CHECK_OUTPUT\n"

PARAMETERS = """\
profile = 'small'          # 'paper' | 'small' | 'smoke'
seed = None                # one seed (e.g. -p seed 3) instead of `seeds`
seeds = [0, 1, 2]          # the committed results hold seeds 0, 1, 2
dataset = None             # None -> the profile's PROFILE_GRID datasets
device = 'auto'
results_dir = None         # None -> the repository's results/ (committed runs are reused from there)
figures_dir = None         # None -> the repository's figures/
rounds = None              # None -> the profile's number of rounds
"""

SETUP = """\
from semifl_core.config import check_parameters
check_parameters(profile, seed, seeds, dataset, rounds, device)   # a bad parameter: one line saying which and why
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns
from semifl_core import report, paper

pd.set_option('display.max_columns', 50, 'display.width', 250, 'display.max_colwidth', 120)
sns.set_theme(style='whitegrid')
seed_list = report.seeds_of(seed, seeds)
pairs = report.grid(profile, dataset)
print(report.describe(profile, pairs, device, seed_list, rounds))
print('results:', report.shown(report.repo_path('results', results_dir)), '| figures:',
      report.shown(report.repo_path('figures', figures_dir)))
"""


def run_cell(builder):
    return (f"df = report.run_pairs(report.{builder}, profile, pairs, seed_list, results_dir, device, rounds)\n"
            "print(report.runs_summary(df))")


def table_cells(builder, table_call, claims_call):
    """Runs, the table per (dataset, N_S) pair, the claims: the cells of Tables 1, 2 and 3."""
    return [run_cell(builder), CHECK + f"for ds, n in pairs:\n    display(report.{table_call})",
            CHECK + f"report.{claims_call}"]


def curves_cell(title, name, baselines=None):
    """Test accuracy per round, one panel per partition, saved as figures_dir/<name> (a Python expression);
    `baselines`: the partitions whose panels also show the centralized baselines."""
    v = "cb" if baselines else "c"
    return ("c = report.curves(df)\n"
            + (f"cb = report.with_baselines(c, {baselines})\n" if baselines else "")
            + "for ds, n in pairs:\n"
            f"    d = {v}[({v}.dataset == ds) & ({v}.num_supervised == n)]\n"
            "    g = report.lineplot_grid(d, 'test_acc', hue='method', col='partition', ylabel='test accuracy (%)', "
            f"title=f'{title} ({{paper.DATASET_NAMES.get(ds, ds)}}, N_S={{n}}, profile {{profile}})')\n"
            f"    print(report.save_figure(g, figures_dir, {name}))\n    plt.show()")


NOTEBOOKS = {
    "table1": dict(
        title="Table 1: SemiFL against the baselines, SSL and SSFL methods",
        intro="Fully Supervised, Partially Supervised, and, under the four partitions (Non-IID K=2, Dir(0.1), "
              "Dir(0.3), IID), SemiFL, FedAvg + FixMatch and supervised FedAvg with sBN (the paper's HeteroFL row). "
              "The SSL rows and FedMatch / FedRGD are **the paper's numbers only** (not run here). Accuracy is the "
              "best round's test accuracy (as the paper reports), mean(population std) over seeds.",
        cells=[run_cell("table1_configs"), CHECK + "for ds, n in pairs:\n    display(report.table1(df, ds, n))",
               CHECK + "for ds, n in pairs:\n    display(report.gap_table(df, ds, n))",
               CHECK + "report.table1_claims(df, pairs)"]),
    "table2": dict(
        title="Table 2: ablation of alternate training (fine-tune x global pseudo-labels)",
        intro="Four combinations of *fine-tune the global model with labeled data* and *generate pseudo-labels with "
              "the global model*, under Non-IID K=2 and IID. Both off is FedAvg + FixMatch (parallel averaging, "
              "per-batch pseudo-labels, no mix loss) as in the paper; both on is SemiFL (Table 1's runs, reused).",
        cells=table_cells("table2_configs", "table2(df, ds, n)", "table2_claims(df, pairs)")),
    "figure6": dict(
        title="Figure 6: quality of pseudo-labeling for the Table 2 variants",
        intro="Pseudo Accuracy (accuracy of all pseudo-labels), Threshold Accuracy (accuracy of those above the "
              "threshold) and Label Ratio (share above the threshold) per round, reusing Table 2's runs.",
        cells=[run_cell("table2_configs"),
               "long = report.pseudo_label_curves(df)\n"
               "for ds, n in pairs:\n"
               "    d = long[(long.dataset == ds) & (long.num_supervised == n)]\n"
               "    g = report.lineplot_grid(d, 'value', hue='method', col='metric', row='partition', "
               "ylabel='%', title=f'Figure 6 ({paper.DATASET_NAMES.get(ds, ds)}, N_S={n}, profile {profile})')\n"
               "    print(report.save_figure(g, figures_dir, f'figure6_{ds}_{n}'))\n    plt.show()",
               CHECK + "report.figure6_claims(long, pairs)"]),
    "table3": dict(
        title="Table 3: sBN statistics from the server only vs from server and clients",
        intro="SemiFL with static batch-norm statistics computed from the server's labeled data only, or from the "
              "server and all clients, under Non-IID K=2 and IID.",
        cells=table_cells("table3_configs", "table3(df, ds, n)", "table3_claims(df, pairs)")),
    "table5": dict(
        title="Table 5 and Figure 9: local epochs E, global momentum beta_g, mix loss",
        intro="The paper compares E=1 with its E=5; here the reduced E is the profile's E divided by 5. "
              "The row with the profile's E, beta_g=0.5 and the mix loss is SemiFL (Table 1's runs, reused). "
              "The learning curves are Figure 9.",
        cells=[run_cell("table5_configs"),
               CHECK + "for ds, n in pairs:\n    display(report.table5(df, profile, ds, n))",
               curves_cell("Figure 9", "'table5_curves' if len(pairs) == 1 else f'table5_curves_{ds}_{n}'"),
               CHECK + "report.table5_claims(df, profile, pairs)"]),
    "figure2": dict(
        title="Figure 2: a vanilla combination of FedAvg and FixMatch",
        intro="FedAvg + FixMatch (server and clients trained in parallel and averaged, per-batch pseudo-labels) with "
              "one local step per round (FedSGD-like) and with the profile's E local epochs, against Fully and "
              "Partially Supervised, under IID and Non-IID K=2.",
        cells=[run_cell("figure2_configs"),
               CHECK + "final = df.groupby(['pair', 'method', 'partition']).best_acc.agg(report.mean_std).unstack()\n"
               "final.reindex(columns=['iid', 'non-iid-l-2'])",
               curves_cell("Figure 2", "'figure2' if len(pairs) == 1 else f'figure2_{ds}_{n}'",
                           baselines="report.ABLATION_PARTITIONS"),
               CHECK + "report.figure2_claims(df, pairs)"]),
    "learning_curves": dict(
        title="Figures 5, 7, 8: learning curves per partition",
        intro="Test accuracy per round of Table 1's runs (reused), one panel per partition; the centralized "
              "baselines are drawn in every panel. The paper's Figures 5, 7 and 8 show CIFAR-10, SVHN and CIFAR-100.",
        cells=[run_cell("table1_configs"),
               curves_cell("Learning curves", "f'learning_curves_{ds}_{n}'", baselines="paper.PARTITIONS"),
               CHECK + "report.learning_curve_claims(df, c, pairs)"]),
    "diagnosis": dict(
        title="Diagnosis: where does a SemiFL round lose accuracy?",
        intro="Instrumented SemiFL runs of the profile (N_S=40, four labels per class, where SemiFL fell below "
              "Partially Supervised, and the profile's N_S): test accuracy of the global model at the start of a "
              "round, of each client model after local training, of their mean, after global momentum and after the "
              "server fine-tune; the fine-tune's loss at its first and last step; which classes the fix set holds. "
              "Then each suspect changed alone (one run per suspect and seed), and the spread that the labeled-set "
              "draw alone causes (split seeds 0-4, everything else fixed). Rule for a verdict: two results differ "
              "only when their means differ by more than their two seed spreads (population std) together; "
              "otherwise *within noise*. Accuracies are final-round test accuracies. One suspect was not fixed in advance: "
              "*no global momentum (beta_g=0)* was added after the first instrumented N_S=40 runs showed the aggregate "
              "losing most accuracy at the momentum step, so it tests a hypothesis the data suggested.",
        extra_parameters="num_supervised_list = None  # None -> [40, the N_S of the profile]\n",
        cells=["from semifl_core.run import get_data, pick_device\n"
               "data = get_data(pairs[0][0], None, pick_device(device))\n"
               "ns_list = num_supervised_list or report.diagnosis_ns(profile, dataset)\n"
               "df = pd.concat([report.run_all(report.diagnosis_configs(profile, ds, n, rounds), seed_list, results_dir,"
               " device) for ds, _ in pairs for n in ns_list], ignore_index=True)\n"
               "print(report.runs_summary(df))",
               CHECK + "report.stage_table(df)",
               "long = report.stage_curves(df)\n"
               "g = report.lineplot_grid(long, 'acc', hue='stage', col='num_supervised', ylabel='test accuracy (%)', "
               "title=f'Accuracy at each stage of a round (profile {profile})')\n"
               "print(report.save_figure(g, figures_dir, f'diagnosis_stages_{pairs[0][0]}'))\nplt.show()",
               CHECK + "report.class_table(df, data.class_names)",
               CHECK + "pd.concat([report.suspects_table(df, n) for n in ns_list], ignore_index=True)",
               "splits = pd.concat([report.run_all(report.split_configs(profile, ds, n, rounds), seed_list[:1], "
               "results_dir, device) for ds, _ in pairs for n in ns_list], ignore_index=True)\n"
               "print(report.runs_summary(splits))",
               CHECK + "report.split_table(splits)",
               "fig, blank = report.augmentation_grid(data)\n"
               "print(report.save_figure(fig, figures_dir, f'augmentation_{pairs[0][0]}'))\nplt.show()\n"
               "print({k: f'{v:.1f}% blank' for k, v in blank.items()})",
               CHECK + "report.diagnosis_findings(df, splits, ns_list)"]),
    "scale": dict(
        title="Scale study: where does SemiFL's effect hold?",
        intro="First the rule that sized the `small` profile and the measurements it used (supervised baselines and "
              "the CPU budget only; fixed before SemiFL ran on the profile). Then SemiFL - Partially Supervised and "
              "the fraction of the Partially -> Fully Supervised gap that SemiFL closes, varying one factor at a "
              "time around the profile: N_S, client epochs E, rounds, model width. The paper's points (CIFAR-10, "
              "SVHN, CIFAR-100; WResNets, 800 rounds) are drawn beside, labeled as the paper's.",
        cells=["# The rule (README, 'The small profile'): (1) E_F = the shortest Fully Supervised training (10/20/40 "
               "epochs)\n# within 0.5 points of twice as long; (2) rounds R = the smallest multiple of 10 with "
               "R*C*N_U*E >= E_F*N;\n# (3) N_S = the largest of 40/100/250/1000 with Fully - Partially Supervised >= "
               "15 points (3 seeds);\n# (4) check: one SemiFL run <= about 10 minutes on 2 cores.\n"
               "ds = pairs[0][0]\n"
               "fsl = report.run_all(report.fsl_sizing_configs(profile, ds), seed_list[:2], results_dir, device)\n"
               "plateau, fsl_epochs = report.fsl_plateau(fsl, report.profile(profile, ds, algorithm='fully-supervised')"
               ".server_batch)\ndisplay(plateau)\n"
               "print('rule (1): E_F =', fsl_epochs, 'epochs')",
               CHECK + "cfg = report.make(profile, ds, report.profile(profile, ds).num_supervised, rounds)\n"
               "r = report.rounds_rule(cfg, fsl_epochs, report.TRAIN_SIZE[ds])\n"
               "print(f'rule (2): R = {r} rounds; the profile has {cfg.rounds}')",
               "df = report.run_all(report.scale_configs(profile, ds, cfg.num_supervised, rounds), seed_list, "
               "results_dir, device)\nprint(report.runs_summary(df))",
               CHECK + "ns_table, ns = report.ns_rule(df[df.label.str.startswith('N_S=')])\ndisplay(ns_table)\n"
               "print(f'rule (3): N_S = {ns}; the profile has {cfg.num_supervised}')",
               CHECK + "report.cost_table(df)",
               CHECK + "table = report.scale_table(df)\ntable.drop(columns=[c for c in table if c.startswith('_')])",
               "fig = report.scale_figure(table, cfg)\n"
               "print(report.save_figure(fig, figures_dir, f'scale_{ds}'))\nplt.show()",
               CHECK + "report.scale_claims(table, cfg)"]),
    "table4": dict(
        title="Table 4: hyperparameters",
        intro="The `paper` profile rendered for each (dataset, N_S) of the paper, beside the paper's Table 4 (and the "
              "text of Section 4 / Appendix C.1 for M, C, tau, a). Then the fields where the chosen profile differs "
              "from the paper's. Nothing is trained here.",
        cells=[CHECK + "report.table4(report.grid('paper'))",
               CHECK + "for ds, n in pairs:\n    display(report.profile_differences(profile, ds, n))",
               CHECK + "report.table4_claims(report.grid('paper'))"]),
}


def build(name, spec) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    params = new_code_cell(PARAMETERS + spec.get("extra_parameters", ""))
    params.metadata["tags"] = ["parameters"]
    cells = [new_markdown_cell(f"# {spec['title']}\n\n{spec['intro']}\n\nThe paper's numbers are quoted from "
                               "`semifl_core/paper.py` and labeled *paper (dataset, N_S)*: they come from CIFAR-10/"
                               "SVHN/CIFAR-100 with WResNets and 800 rounds, not from this run. *Partially Supervised* "
                               "here trains on the N_S labels with SemiFL's server budget (5 epochs a round, for the "
                               "profile's rounds); *Fully Supervised* on all labels for the profile's length "
                               "(README, 'The small profile'). Results are mean (population std) and n over seeds. "
                               f"{report.RULE} The last cell states what held at this profile."),
    params, new_code_cell(SETUP)]
    cells += [new_code_cell(src) for src in spec["cells"]]
    nb.cells = cells
    for i, c in enumerate(nb.cells):
        c["id"] = f"{name}-{i}"
    return nb


def main():
    for name, spec in NOTEBOOKS.items():
        nbformat.write(build(name, spec), HERE / f"{name}.ipynb")
        print("wrote", HERE / f"{name}.ipynb")


if __name__ == "__main__":
    main()

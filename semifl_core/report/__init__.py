"""What the notebooks share, by job: runs (configs per profile, running them, reading them back), configs (the runs of
each paper item), paper (the paper's numbers), tables, figures, rule (verdicts) and claims. Data flows
runs -> configs -> tables / figures -> claims; readme (README.md's headline table, from results/ and the confirmation)
reads them all, confirmation (the fresh-seed confirmation of the claims the seed plan decided) judges its claims, and so does label_skew (the label-skew study, imported by its notebook as
`report.label_skew`). Re-exported below: the names the notebooks, the CLI, the tests and the docs call as `report.<name>`."""
from ..config import TRAIN_SIZE, profile
from .claims import (Takeaway, cbafed_claims, diagnosis_findings, feddure_claims, few_label_claims, horizon_claims, figure2_claims, figure6_claims,
                     learning_curve_claims, takeaway, theorem1_claims,
                     scale_claims, table1_claims, table2_claims, table3_claims, table4_claims, table5_claims)
from .configs import (authors_details_configs, cbafed_code_configs, check_methods, table1_runs, cbafed_configs, cbafed_own_setting_configs, diagnosis_configs, diagnosis_ns, feddure_configs, feddure_length_configs,
                      feddure_length_runs, feddure_runs,
                      few_label_configs, figure2_configs, horizon_configs, horizon_runs,
                      fsl_sizing_configs, scale_configs, split_configs, table1_configs, table2_configs, table3_configs,
                      table5_configs)
from .figures import (PSEUDO_BOUNDS, PSEUDO_UNITS, FEW_LABEL_BOUNDS, augmentation_grid, cbafed_figure, few_label_curves, horizon_figure, lineplot_grid, pseudo_label_curves, save_figure, scale_figure,
                      stage_curves, with_baselines)
from .paper import ABLATION_PARTITIONS
from .rule import (NOT_WORSE_RULE, RULE, SEPARATION_RULE, Seeded, Verdict, above, at_least, bootstrap_at_least, every,
                   family, flip, not_worse, paired, separation, welch)
from . import confirmation  # noqa: F401 (report.confirmation.frame in the notebooks)
from .runs import (COLUMNS, REPO, curves, describe, estimate_minutes, grid, make, minutes_per_round, notebook_setup,
                   plain_tables, repo_path, table_html, run_all, run_pairs, stored_runs,
                   runs_summary, say, seeds_of, shown, train_minutes)
from .tables import (authors_details_table, best_after, cbafed_labeled_clients, cbafed_paper_only, cbafed_code_table, cbafed_probe_table, cbafed_probes, cbafed_table, figure2_table, table1_paper_only, class_table, cost_table, horizon_points, horizon_table, long_winners_table, feddure_length_table, feddure_table, few_label_noniid_table, few_label_table, fsl_plateau, gap_table, mean_std, ns_rule,
                     left_out, profile_differences, rounds_rule, scale_table, split_table, stage_table, suspects_table, table1,
                     table2, table2_ends, table3, table4, table5)

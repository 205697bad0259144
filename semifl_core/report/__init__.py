"""What the notebooks share, by job: runs (configs per profile, running and reading them), configs (each paper item's
runs), paper (the paper's numbers), tables, figures, rule (verdicts), claims; runs -> configs -> tables / figures ->
claims. readme (README.md's headline table) reads them all; confirmation judges the README's claims (exploration at
seeds 0-2, confirmation on fresh seeds).
Re-exported below: the names the notebooks, the CLI, the tests and the docs call as `report.<name>`."""
from ..config import TRAIN_SIZE, profile
from .claims import Takeaway, takeaway
from .configs import (cbafed_code_configs, cbafed_configs, cbafed_own_setting_configs,
                      check_methods, diagnosis_configs, diagnosis_ns, feddure_configs, feddure_length_configs,
                      feddure_length_runs, feddure_runs, few_label_configs, figure2_configs, horizon_runs,
                      scale_configs, split_configs, table1_configs, table1_runs, table2_configs, table3_configs,
                      table5_configs)
from .figures import lineplot_grid, save_figure, with_baselines
from .paper import ABLATION_PARTITIONS
from .rule import above, at_least, every
from . import confirmation  # noqa: F401 (report.confirmation.frame in the notebooks)
from ..results import estimate_minutes, train_minutes
from .runs import (COLUMNS, curves, grid, make, notebook_setup, plain_tables, REPO, repo_path,
                   run_all, run_pairs, runs_summary, say, shown, stored_runs, table_html)
from .tables import gap_table, left_out, mean_std, table1

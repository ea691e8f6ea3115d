"""Records: the one place the step, episode and probe records are defined, written and read.

- `turnbudget.records.schema`: what a record holds (`StepRecord`,
  `EpisodeRecord`, `InjectedError`), string caps, one JSON line per record;
- `turnbudget.records.sink`: `RecordSink`, the durable append of whole
  episodes (fsync, a lock, torn-tail repair), used by `RecordStepOutcomes`
  and its team form;
- `turnbudget.records.files`: a run directory's ``run.json``,
  ``episodes.jsonl`` and ``steps.jsonl``: checked reading, resume repair,
  writing.

It sits below the wrappers and the evaluator, which both use it; nothing else
writes or parses these files by hand.
"""

from __future__ import annotations

from turnbudget.records.files import (
    EPISODES_FILE,
    EVALUATION_FILES,
    RUN_FILE,
    STEPS_FILE,
    EpisodeLog,
    LogError,
    LogWriter,
    RunPlan,
    folders_below,
    iter_episodes,
    iter_records,
    prepare_run_dir,
    present,
    read_config_dict,
    read_episodes,
    read_jsonl,
    read_steps,
    repair_logs,
    run_dirs_below,
    write_json,
    write_jsonl,
)
from turnbudget.records.schema import (
    BUDGET_COUNTERS,
    MAX_COUNT,
    MAX_RECORD_TEXT,
    EpisodeRecord,
    InjectedError,
    OutcomeRecord,
    StepRecord,
    cap_strings,
    cap_text,
    dumps,
    dumps_lines,
    dumps_template_lines,
    encodes_alike,
    feasibility,
    format_episode_id,
)
from turnbudget.records.sink import RecordSink, repair_torn_tail

__all__ = [
    "BUDGET_COUNTERS",
    "EPISODES_FILE",
    "EVALUATION_FILES",
    "MAX_COUNT",
    "MAX_RECORD_TEXT",
    "RUN_FILE",
    "STEPS_FILE",
    "EpisodeLog",
    "EpisodeRecord",
    "InjectedError",
    "LogError",
    "LogWriter",
    "OutcomeRecord",
    "RecordSink",
    "RunPlan",
    "StepRecord",
    "cap_strings",
    "cap_text",
    "dumps",
    "dumps_lines",
    "dumps_template_lines",
    "encodes_alike",
    "feasibility",
    "folders_below",
    "format_episode_id",
    "iter_episodes",
    "iter_records",
    "prepare_run_dir",
    "present",
    "read_config_dict",
    "read_episodes",
    "read_jsonl",
    "read_steps",
    "repair_logs",
    "repair_torn_tail",
    "run_dirs_below",
    "write_json",
    "write_jsonl",
]

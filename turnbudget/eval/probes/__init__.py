"""Teacher-forced probes of single-step and recovery-specific skill: `plan`, `run` (`probe`,
on the episode driver), `summary` (skills with intervals that never collapse, and
`compare_probes`), `validate` (the metrics checked on control agents whose true skills
are known: `turnbudget validate`), and `team` (the team single-step probe)."""

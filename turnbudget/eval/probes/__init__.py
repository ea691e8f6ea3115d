"""Teacher-forced probes of single-step and recovery skill: `plan`, `run` (`probe`, on the
episode driver), `summary` (chance-normalized skills with intervals), and `team`
(the team single-step probe)."""

"""Running: what a run plays (`plan`), how (`driver`, with a kind of run: `episodes`,
`team`), where (`backends`), and the guards around it (`lock`, `agent_view`, and
`sealed`: an agent in a process of its own).

`evaluate` (`turnbudget.eval.run.evaluate`) and `evaluate_team`
(`turnbudget.eval.run.team`) are the front doors; `turnbudget.eval.probes`
plays its probes on the same driver and backends.
"""

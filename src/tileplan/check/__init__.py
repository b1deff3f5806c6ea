"""`tileplan check`: the independent re-derivation of a report from the report alone.

`driver.check_report` runs the passes; one module per part of the report re-derives
it with check's own code: `values` and `shards` (each value's sizes), `timeline` (the
live runs, the usage), `exact` and `verdict` (the judgement), `program`,
`operations`, `whatif`, `nontensor` and `placement` (the sections), `result` (the
findings). It imports the report's format (`tileplan.report`) and the core, never
anything that plans (the planner, the lowering, the operators, the importers, the
application layer where `tileplan.app.build` makes a report from a plan): not
directly, not through what it imports.
"""

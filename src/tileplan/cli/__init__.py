"""The command line: one module per verb, `main` maps errors to exit codes."""

#: exit code of `plan --fail-over-budget` and `check --budget` when the program does not fit
EXIT_OVER_BUDGET = 3

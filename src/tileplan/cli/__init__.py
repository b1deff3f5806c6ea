"""The command line: one module per verb, `main` maps errors to exit codes."""

"""The application layer: what a user asks for, above the planner.

`request` (a model, a machine and options as one value; the defaults per machine and
per model decided once, for the CLI and the API), `sources` (what a MODEL argument
names: a built-in, a file, a hub id), `whatif` and `sweep` (re-plans of a request),
`build` (a plan made a report: the one place the planner's values meet the report's
sections), `api` (`tileplan.plan` for notebooks). The CLI verbs call these; nothing below
imports them.
"""

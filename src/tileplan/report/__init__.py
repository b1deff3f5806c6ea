"""The report format: the `Report` and its typed sections (one frozen dataclass each,
read and written from its fields' declarations, both JSON Schemas generated from
them), the one reader, versions 1 and 2, and writing. It imports only the core
(`model`, `errors`, `ioutil`): a report is built from a plan one layer up
(`tileplan.app.build`), re-derived by `tileplan.check` and read by `tileplan.views`."""

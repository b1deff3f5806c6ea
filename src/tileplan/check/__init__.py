"""`tileplan check`: the independent re-derivation of a report from the report alone."""

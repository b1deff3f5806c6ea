"""The typed vocabulary of the report: precisions, layouts, tilings, shards."""

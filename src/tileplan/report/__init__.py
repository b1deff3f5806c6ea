"""Reports: the versioned JSON document, and what is built from it."""

"""The planner: small named passes over the timeline, each data in, data out."""

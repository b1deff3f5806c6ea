"""The targets tileplan plans for, each a package behind one protocol (its devices,
memory map, allocator, layouts, per-operation rules and words)."""

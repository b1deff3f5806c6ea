"""Tenstorrent Wormhole and Blackhole: tt-metal's devices, allocator, circular buffers
and words (TENSTORRENT-NOTES.md gives the sources of each fact)."""

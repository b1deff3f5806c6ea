"""The view models people read, built from a `Report` (data only, nothing rendered):
what `render/` draws and the CLI prints."""

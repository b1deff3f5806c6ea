"""Everything that makes a program: the torch.export and ONNX importers, Hugging Face
configurations, and the graph builder they share (`tileplan.importers.graph`).
docs/notes/IMPORT-NOTES.md has what torch.export and ONNX give, as measured for their
design."""

"""The built-in models, built through the importers' graph builder
(`tileplan.importers.graph`): the SigLIP / ViT vision towers (`siglip`) and the
synthetic chain of a requested size (`synthetic`, `synthetic:N`)."""

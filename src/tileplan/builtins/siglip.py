"""The built-in SigLIP / ViT vision towers, built through the importers' graph builder
(`tileplan.importers.graph`), named and numbered as the reference numbers them.

Dimensions from the public model cards (docs/machine-and-model.md): so400m-patch14-384
has hidden 1152, MLP 4304, 16 heads of 72, 27 layers, 27 x 27 = 729 patches of
14 x 14 x 3 = 588, no class token, and a MAP head (a learned probe attends to the
tokens, then LayerNorm and an MLP with a residual around the MLP). Weights take the
chosen weight precision; activations, vectors, the position table and the probe stay
F16, as in the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.errors import InputError
from tileplan.importers.graph import Graph, GraphBuilder
from tileplan.importers.hf_config import read_vision_config
from tileplan.model.info import ModelShape, ProgramInfo
from tileplan.model.ir import ITERATION, Program, family_member
from tileplan.model.precision import F16, Precision
from tileplan.model.role import Role


#: the largest dimensions a tower may have: beyond them a config is a typo or hostile
#: (a million layers or a hidden size of 2^40 would take hours and gigabytes to plan)
LIMITS = {"layers": 1000, "batch": 4096, "channels": 1024}


@dataclass(frozen=True, slots=True)
class ViTConfig:
    """A vision tower's dimensions. Invariant: hidden divisible by heads."""

    name: str
    hidden: int
    mlp: int
    heads: int
    layers: int
    image: int
    patch: int
    channels: int = 3
    map_head: bool = True
    batch: int = 1

    def __post_init__(self) -> None:
        for key in ("hidden", "mlp", "heads", "layers", "image", "patch", "channels", "batch"):
            value, most = getattr(self, key), LIMITS.get(key, 1 << 20)
            if not 1 <= value <= most:
                raise InputError(f"{self.name}: {key} must be in [1, {most}], found {value}")
        if self.hidden % self.heads:
            raise InputError(f"{self.name}: hidden {self.hidden} is not divisible by {self.heads} heads")
        if self.image < self.patch:
            raise InputError(f"{self.name}: image {self.image} is smaller than patch {self.patch}")

    @property
    def tokens(self) -> int:
        """Patches per image: a stride-`patch` convolution drops the remainder (384 // 14 = 27)."""
        return (self.image // self.patch) ** 2

    @property
    def patch_dim(self) -> int:
        return self.patch * self.patch * self.channels


CONFIGS: dict[str, ViTConfig] = {
    c.name: c for c in (
        ViTConfig("siglip-so400m-patch14-384", hidden=1152, mlp=4304, heads=16, layers=27, image=384, patch=14),
        ViTConfig("siglip-so400m-patch14-224", hidden=1152, mlp=4304, heads=16, layers=27, image=224, patch=14),
        ViTConfig("siglip-base-patch16-224", hidden=768, mlp=3072, heads=12, layers=12, image=224, patch=16),
        ViTConfig("siglip-large-patch16-384", hidden=1024, mlp=4096, heads=16, layers=24, image=384, patch=16),
    )
}
DEFAULT_MODEL = "siglip-so400m-patch14-384"


def config(name: str, layers: int | None = None, map_head: bool | None = None, batch: int | None = None
           ) -> ViTConfig:
    """A named configuration, or the one a Hugging Face `config.json` describes (a path
    ending in .json), with the layer count and MAP head overridden when given."""
    if name.endswith(".json"):
        model, fields = read_vision_config(name)
        c = ViTConfig(model, **fields)
    elif name not in CONFIGS:
        raise InputError(f"unknown model {name!r}; expected one of {', '.join(sorted(CONFIGS))} or a Hugging "
                         "Face config.json")
    else:
        c = CONFIGS[name]
    if layers is not None:
        c = replace(c, layers=layers)
    if map_head is not None:
        c = replace(c, map_head=map_head)
    if batch is not None:
        c = replace(c, batch=batch)
    return c


def _encoder_families(D: int, F: int) -> dict[str, tuple[int, ...]]:
    """The encoder's parameter families, suffix -> shape, in declaration order (family
    by family, each family's members layer by layer: the reference's order)."""
    return {
        "attention_norm.scale": (1, 1, D), "attention_norm.bias": (1, 1, D),
        "attention.qkv.weight": (D, 3 * D), "attention.qkv.bias": (1, 1, 3 * D),
        "attention.output.weight": (D, D), "attention.output.bias": (1, 1, D),
        "mlp_norm.scale": (1, 1, D), "mlp_norm.bias": (1, 1, D),
        "mlp.up.weight": (D, F), "mlp.up.bias": (1, 1, F),
        "mlp.down.weight": (F, D), "mlp.down.bias": (1, 1, D),
    }


class _Tower:
    """The graph builder as the reference names and numbers a tower: every node
    numbered as declared, an operation `name`'s result `name.out`, activations and
    vectors F16 (`float`); weights take the weight precision, as `Graph.to_program`
    gives every matrix a matmul reads as its weight."""

    def __init__(self, name: str) -> None:
        self.b = GraphBuilder(name, origins="declared")

    def declare(self, name: str, shape: tuple[int, ...], role: Role = Role.WEIGHT) -> str:
        if role is Role.INPUT:
            return self.b.input(name, shape, "float")
        return self.b.parameter(name, shape, "float")

    def op(self, kind: str, name: str, inputs: tuple[str, ...], **attrs: object) -> str:
        return self.b.op(kind, inputs, attrs, name=name, output=f"{name}.out")


def _encoder_layer(t: _Tower, cfg: ViTConfig, layer: str, h: str) -> str:
    """One encoder layer's 14 operations on `h`, reading the parameters `{layer}.*`
    (`vit.encoder.layer3.attention.qkv.weight`); returns the layer's output."""
    p = lambda suffix: f"{layer}.{suffix}"  # noqa: E731
    n1 = t.op("layernorm", p("attention_norm"), (h, p("attention_norm.scale"), p("attention_norm.bias")), eps=1e-6)
    qkv = t.op("matmul", p("attention.qkv"), (n1, p("attention.qkv.weight")))
    qkv = t.op("add", p("attention.qkv.bias_add"), (qkv, p("attention.qkv.bias")))
    a = t.op("attention", p("attention.products"), (qkv,), heads=cfg.heads)
    o = t.op("matmul", p("attention.output"), (a, p("attention.output.weight")))
    o = t.op("add", p("attention.output.bias_add"), (o, p("attention.output.bias")))
    h2 = t.op("add", p("attention.residual"), (h, o))
    n2 = t.op("layernorm", p("mlp_norm"), (h2, p("mlp_norm.scale"), p("mlp_norm.bias")), eps=1e-6)
    u = t.op("matmul", p("mlp.up"), (n2, p("mlp.up.weight")))
    u = t.op("add", p("mlp.up.bias_add"), (u, p("mlp.up.bias")))
    g = t.op("gelu", p("mlp.gelu"), (u,), approximate="tanh")
    d = t.op("matmul", p("mlp.down"), (g, p("mlp.down.weight")))
    d = t.op("add", p("mlp.down.bias_add"), (d, p("mlp.down.bias")))
    return t.op("add", p("mlp.residual"), (h2, d))


def vit_graph(cfg: ViTConfig) -> Graph:
    """The tower as a graph: patch embedding, position, the encoder (its layers one
    repeat block, `vit.encoder`), the final norm and (optionally) the MAP head."""
    t = _Tower(cfg.name)
    D, F, S, B = cfg.hidden, cfg.mlp, cfg.tokens, cfg.batch

    patches = t.declare("vit.image.patches", (B, S, cfg.patch_dim), role=Role.INPUT)
    w = t.declare("vit.embedding.weight", (cfg.patch_dim, D))
    bias = t.declare("vit.embedding.bias", (1, 1, D))
    x = t.op("matmul", "vit.embedding", (patches, w))
    x = t.op("add", "vit.embedding.bias_add", (x, bias))
    pos = t.declare("vit.position", (1, S, D))
    x = t.op("add", "vit.position_add", (x, pos))

    # The encoder's parameters: declared per family, one per layer.
    family = f"vit.encoder.layer{ITERATION}"
    for suffix, shape in _encoder_families(D, F).items():
        for i in range(cfg.layers):
            t.declare(family_member(f"{family}.{suffix}", i), shape)
    x = t.b.repeat("vit.encoder", family, cfg.layers, x, lambda layer, h: _encoder_layer(t, cfg, layer, h))

    scale = t.declare("vit.encoder.final_norm.scale", (1, 1, D))
    shift = t.declare("vit.encoder.final_norm.bias", (1, 1, D))
    x = t.op("layernorm", "vit.encoder.final_norm", (x, scale, shift), eps=1e-6)

    if cfg.map_head:
        probe = t.declare("vit.map.probe", (1, 1, D))
        kvw = t.declare("vit.map.attention.kv.weight", (D, 2 * D))
        kvb = t.declare("vit.map.attention.kv.bias", (1, 1, 2 * D))
        kv = t.op("matmul", "vit.map.attention.kv", (x, kvw))
        kv = t.op("add", "vit.map.attention.kv.bias_add", (kv, kvb))
        qw = t.declare("vit.map.attention.query.weight", (D, D))
        qb = t.declare("vit.map.attention.query.bias", (1, 1, D))
        q = t.op("matmul", "vit.map.attention.query", (probe, qw))
        q = t.op("add", "vit.map.attention.query.bias_add", (q, qb))
        a = t.op("attention", "vit.map.attention.products", (q, kv), heads=cfg.heads)
        ow = t.declare("vit.map.attention.output.weight", (D, D))
        ob = t.declare("vit.map.attention.output.bias", (1, 1, D))
        y = t.op("matmul", "vit.map.attention.output", (a, ow))
        y = t.op("add", "vit.map.attention.output.bias_add", (y, ob))
        ns = t.declare("vit.map.norm.scale", (1, 1, D))
        nb = t.declare("vit.map.norm.bias", (1, 1, D))
        n = t.op("layernorm", "vit.map.norm", (y, ns, nb), eps=1e-6)
        uw = t.declare("vit.map.mlp.up.weight", (D, F))
        ub = t.declare("vit.map.mlp.up.bias", (1, 1, F))
        u = t.op("matmul", "vit.map.mlp.up", (n, uw))
        u = t.op("add", "vit.map.mlp.up.bias_add", (u, ub))
        g = t.op("gelu", "vit.map.mlp.gelu", (u,), approximate="tanh")
        dw = t.declare("vit.map.mlp.down.weight", (F, D))
        db = t.declare("vit.map.mlp.down.bias", (1, 1, D))
        d = t.op("matmul", "vit.map.mlp.down", (g, dw))
        d = t.op("add", "vit.map.mlp.down.bias_add", (d, db))
        x = t.op("add", "vit.map.mlp.residual", (y, d))
    t.b.output(x)
    return t.b.build()


def build_vit(cfg: ViTConfig, weights: Precision, unroll: bool = False, activations: Precision = F16) -> Program:
    """The tower as a program (`vit_graph`), weights in `weights`, every other floating
    tensor in `activations` (F16, the seed's, unless asked).

    The encoder is one repeat block of `cfg.layers` iterations, or with `unroll` that
    many copies of its body, layer i reading its own parameters
    (`vit.encoder.layer3.attention.qkv.weight`) and layer i + 1 reading layer i's
    output. Invariant: the declared tensors (hence the values 0..n-1 of a plan) are the
    same, in the same order, either way; only the operations differ (unrolled: every
    step runs once, operations named per layer and numbered in execution order).
    """
    info = ProgramInfo(  # like a repr, the info omits the defaults: batch 1, a repeat block, F16 activations
        shape=ModelShape(layers=cfg.layers, batch=cfg.batch if cfg.batch != 1 else None), map_head=cfg.map_head,
        unroll=unroll, activations=activations if activations != F16 else None)
    return vit_graph(cfg).to_program(weights, activations, info, repeat=not unroll)

"""Builders for the SigLIP / ViT vision towers.

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
from tileplan.model.hf_config import read_vision_config
from tileplan.model.ir import ITERATION, Operation, Program, RepeatBlock, Tensor, family_member
from tileplan.model.precision import F16, Precision


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


class GraphBuilder:
    """Numbers graph nodes (`origin`) and operations (`index`) in declaration order."""

    def __init__(self, weights: Precision) -> None:
        self.weights = weights
        self.origin = 0
        self.op_index = 0
        self.tensors: list[Tensor] = []
        self.items: list[Operation | RepeatBlock] = []
        self.shapes: dict[str, tuple[int, ...]] = {}

    def node(self) -> int:
        self.origin += 1
        return self.origin - 1

    def declare(self, name: str, shape: tuple[int, ...], precision: Precision = F16,
                role: str = "parameter") -> str:
        self.tensors.append(Tensor(self.node(), name, shape, precision, role))
        self.shapes[name] = shape
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        return self.declare(name, shape, self.weights)

    def op(self, kind: str, name: str, inputs: tuple[str, ...], shape: tuple[int, ...],
           body: list[Operation] | None = None, **attrs: object) -> str:
        out = f"{name}.out"
        operation = Operation(self.node(), self.op_index, kind, name, inputs, out, shape, F16,
                              tuple(sorted(attrs.items())))
        self.op_index += 1
        (body if body is not None else self.items).append(operation)
        self.shapes[out] = shape
        return out


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


def _encoder_layer(b: GraphBuilder, cfg: ViTConfig, layer: str, h: str, body: list[Operation] | None) -> str:
    """One encoder layer's 14 operations on `h`, reading the parameters `{layer}.*`;
    returns the layer's output. `layer` is the family form (`vit.encoder.layer{i}`,
    operations appended to `body`) or one layer (`vit.encoder.layer3`, `body` None:
    appended to the program's items)."""
    D, F, S, B = cfg.hidden, cfg.mlp, cfg.tokens, cfg.batch
    row = (B, S, D)
    p = lambda suffix: f"{layer}.{suffix}"  # noqa: E731
    n1 = b.op("layernorm", p("attention_norm"), (h, p("attention_norm.scale"), p("attention_norm.bias")),
              row, body, eps=1e-6)
    qkv = b.op("matmul", p("attention.qkv"), (n1, p("attention.qkv.weight")), (B, S, 3 * D), body)
    qkv = b.op("add", p("attention.qkv.bias_add"), (qkv, p("attention.qkv.bias")), (B, S, 3 * D), body)
    a = b.op("attention", p("attention.products"), (qkv,), row, body, heads=cfg.heads)
    o = b.op("matmul", p("attention.output"), (a, p("attention.output.weight")), row, body)
    o = b.op("add", p("attention.output.bias_add"), (o, p("attention.output.bias")), row, body)
    h2 = b.op("add", p("attention.residual"), (h, o), row, body)
    n2 = b.op("layernorm", p("mlp_norm"), (h2, p("mlp_norm.scale"), p("mlp_norm.bias")), row, body, eps=1e-6)
    u = b.op("matmul", p("mlp.up"), (n2, p("mlp.up.weight")), (B, S, F), body)
    u = b.op("add", p("mlp.up.bias_add"), (u, p("mlp.up.bias")), (B, S, F), body)
    g = b.op("gelu", p("mlp.gelu"), (u,), (B, S, F), body, approximate="tanh")
    d = b.op("matmul", p("mlp.down"), (g, p("mlp.down.weight")), row, body)
    d = b.op("add", p("mlp.down.bias_add"), (d, p("mlp.down.bias")), row, body)
    return b.op("add", p("mlp.residual"), (h2, d), row, body)


def build_vit(cfg: ViTConfig, weights: Precision, unroll: bool = False) -> Program:
    """The tower as a program: patch embedding, position, the encoder, the final norm
    and (optionally) the MAP head.

    The encoder is one repeat block of `cfg.layers` iterations, or with `unroll` that
    many copies of its body, layer i reading its own parameters
    (`vit.encoder.layer3.attention.qkv.weight`) and layer i + 1 reading layer i's
    output. Invariant: the declared tensors (hence the values 0..n-1 of a plan) are the
    same, in the same order, either way; only the operations differ (unrolled: every
    step runs once, operations named per layer and numbered in execution order).
    """
    b = GraphBuilder(weights)
    D, F, S, B = cfg.hidden, cfg.mlp, cfg.tokens, cfg.batch
    row = (B, S, D)

    patches = b.declare("vit.image.patches", (B, S, cfg.patch_dim), role="input")
    w = b.weight("vit.embedding.weight", (cfg.patch_dim, D))
    bias = b.declare("vit.embedding.bias", (1, 1, D))
    x = b.op("matmul", "vit.embedding", (patches, w), row)
    x = b.op("add", "vit.embedding.bias_add", (x, bias), row)
    pos = b.declare("vit.position", (1, S, D))
    x = b.op("add", "vit.position_add", (x, pos), row)

    # The encoder's parameters: declared per family, one per layer.
    family = f"vit.encoder.layer{ITERATION}"
    families = _encoder_families(D, F)
    for suffix, shape in families.items():
        for i in range(cfg.layers):
            name = family_member(f"{family}.{suffix}", i)
            (b.weight if suffix.endswith(".weight") else b.declare)(name, shape)
    if unroll:
        for i in range(cfg.layers):
            x = _encoder_layer(b, cfg, family_member(family, i), x, None)
    else:
        body: list[Operation] = []
        out = _encoder_layer(b, cfg, family, x, body)
        b.items.append(RepeatBlock(cfg.layers, "vit.encoder", tuple(f"{family}.{s}" for s in families), tuple(body),
                                   carried_in=x, carried_out=out))
        x = out  # the block's loop-carried value; after the block it holds the last layer's output

    scale = b.declare("vit.encoder.final_norm.scale", (1, 1, D))
    shift = b.declare("vit.encoder.final_norm.bias", (1, 1, D))
    x = b.op("layernorm", "vit.encoder.final_norm", (x, scale, shift), row, eps=1e-6)
    outputs = (x,)

    if cfg.map_head:
        probe = b.declare("vit.map.probe", (1, 1, D))
        kvw = b.weight("vit.map.attention.kv.weight", (D, 2 * D))
        kvb = b.declare("vit.map.attention.kv.bias", (1, 1, 2 * D))
        kv = b.op("matmul", "vit.map.attention.kv", (x, kvw), (B, S, 2 * D))
        kv = b.op("add", "vit.map.attention.kv.bias_add", (kv, kvb), (B, S, 2 * D))
        qw = b.weight("vit.map.attention.query.weight", (D, D))
        qb = b.declare("vit.map.attention.query.bias", (1, 1, D))
        q = b.op("matmul", "vit.map.attention.query", (probe, qw), (1, 1, D))
        q = b.op("add", "vit.map.attention.query.bias_add", (q, qb), (1, 1, D))
        a = b.op("attention", "vit.map.attention.products", (q, kv), (B, 1, D), heads=cfg.heads)
        ow = b.weight("vit.map.attention.output.weight", (D, D))
        ob = b.declare("vit.map.attention.output.bias", (1, 1, D))
        y = b.op("matmul", "vit.map.attention.output", (a, ow), (B, 1, D))
        y = b.op("add", "vit.map.attention.output.bias_add", (y, ob), (B, 1, D))
        ns = b.declare("vit.map.norm.scale", (1, 1, D))
        nb = b.declare("vit.map.norm.bias", (1, 1, D))
        n = b.op("layernorm", "vit.map.norm", (y, ns, nb), (B, 1, D), eps=1e-6)
        uw = b.weight("vit.map.mlp.up.weight", (D, F))
        ub = b.declare("vit.map.mlp.up.bias", (1, 1, F))
        u = b.op("matmul", "vit.map.mlp.up", (n, uw), (B, 1, F))
        u = b.op("add", "vit.map.mlp.up.bias_add", (u, ub), (B, 1, F))
        g = b.op("gelu", "vit.map.mlp.gelu", (u,), (B, 1, F), approximate="tanh")
        dw = b.weight("vit.map.mlp.down.weight", (F, D))
        db = b.declare("vit.map.mlp.down.bias", (1, 1, D))
        d = b.op("matmul", "vit.map.mlp.down", (g, dw), (B, 1, D))
        d = b.op("add", "vit.map.mlp.down.bias_add", (d, db), (B, 1, D))
        outputs = (b.op("add", "vit.map.mlp.residual", (y, d), (B, 1, D)),)

    options: dict[str, object] = {"layers": cfg.layers, "weights": weights.to_text(), "map_head": cfg.map_head}
    if cfg.batch != 1:  # like a repr, the options omit the default
        options["batch"] = cfg.batch
    if unroll:  # like a repr, the options omit the default (a repeat block)
        options["unroll"] = True
    program = Program(cfg.name, tuple(b.tensors), tuple(b.items), outputs, options)
    return program

"""Small models for the tt-mlir frontend's tests: a Linear + GELU MLP and a small CNN as
torch modules, a BERT layer and a Llama decoder from config.json files, imported once per
session (torch.export on the meta device), and IR programs built by hand for one
operation."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from tileplan.importers.graph import GraphBuilder
from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import Device, load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.program import TtProgram

BF16 = Precision("BF16")
DATA = Path(__file__).parent / "data"

BERT = {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": 256, "num_hidden_layers": 1,
        "num_attention_heads": 4, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 512,
        "type_vocab_size": 2, "torch_dtype": "bfloat16"}
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
         "vocab_size": 512, "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
         "torch_dtype": "bfloat16"}


@lru_cache(maxsize=None)
def n150() -> Device:
    return load_device("n150")


@lru_cache(maxsize=None)
def mlp() -> Program:
    """Linear(64, 128) -> GELU -> Linear(128, 64) on a [1, 32, 64] bf16 input."""
    import torch
    from tileplan.importers.torch_export import from_torch

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.act, self.fc2 = torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(self.act(self.fc1(x)))

    return from_torch(MLP(), (torch.zeros(1, 32, 64),), "mlp").to_program(BF16, BF16, repeat=False)


@lru_cache(maxsize=None)
def cnn() -> Program:
    """conv 3x3 (3 -> 32) + batch norm + ReLU, conv 3x3 stride 2 (32 -> 64) + ReLU, a 1x1
    conv with a residual add, a spatial mean and a Linear(64, 10); [1, 3, 64, 64]."""
    import torch
    from tileplan.importers.torch_export import from_torch

    class CNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.b1 = torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32)
            self.c2 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
            self.c3 = torch.nn.Conv2d(64, 64, 1)
            self.fc = torch.nn.Linear(64, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.b1(self.c1(x)))
            x = torch.relu(self.c2(x))
            x = self.c3(x) + x
            return self.fc(x.mean(dim=(2, 3)))

    return from_torch(CNN(), (torch.zeros(1, 3, 64, 64),), "cnn").to_program(BF16, BF16, repeat=False)


@lru_cache(maxsize=None)
def upsampler() -> Program:
    """conv 3x3 (3 -> 16) + ReLU, a 2 x 2 stride-2 transposed conv (16 -> 8, bias) +
    batch norm + ReLU, a 3 x 3 stride-2 transposed conv (8 -> 4, padding 1, output
    padding 1, no bias); [1, 3, 16, 16] -> [1, 4, 64, 64]."""
    import torch
    from tileplan.importers.torch_export import from_torch

    class Upsampler(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.up, self.bn = torch.nn.ConvTranspose2d(16, 8, 2, stride=2), torch.nn.BatchNorm2d(8)
            self.up2 = torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.c(x))
            return self.up2(torch.relu(self.bn(self.up(x))))

    return from_torch(Upsampler(), (torch.zeros(1, 3, 16, 16),), "upsampler").to_program(BF16, BF16, repeat=False)


def config_program(config: dict, tmp: Path, sequence: int, batch: int = 1) -> Program:
    """A config.json's model (written under `tmp`) as the tt-mlir frontend imports it."""
    from tileplan.app.tenstorrent.tt_mlir_models import ImportedModel

    path = tmp / f"{config['model_type']}.json"
    path.write_text(json.dumps(config))
    return ImportedModel(str(path)).program(batch, sequence)


def attention(q: tuple[int, ...], kv: tuple[int, ...], mask: tuple[int, ...] | None, scale: float = 0.125,
              causal: bool = False) -> Program:
    """One scaled dot-product attention of bf16 inputs, the mask a buffer."""
    b = GraphBuilder("sdpa")
    qn, kn, vn = b.input("q", q, "float"), b.input("k", kv, "float"), b.input("v", kv, "float")
    inputs = [qn, kn, vn]
    if mask is not None:
        inputs.append(b.parameter("mask", mask, "float", buffer=True))
    out = b.op("sdpa", inputs, {"causal": causal, "scale": scale}, name="attention")
    b.output(out)
    return b.build().to_program(BF16, BF16, repeat=False)


def lowered(program: Program, level: int = 0, **options: object) -> TtProgram:
    return lower(program, TtMlirOptions(opt_level=level, **options), n150())  # type: ignore[arg-type]


def kinds(program: TtProgram) -> list[str]:
    """The operations' ttnn names in order."""
    return [op.kind.value for op in program.ops]

"""Writes the torchvision models of tests/data/zoo (see README.md there): each built on
the meta device (shapes, no weights), exported with torch.export, saved, then
rewritten deflated without the sample inputs (a pickle tileplan never reads).

Two kinds of file:
- `NAMES`: torchvision's model as graphcore/poptorch tests/torchvision_inference_test.py
  runs it, FP32, at [1, 3, 224, 224].
- `PUBLISHED`: the configurations whose published outcome docs/fidelity.md holds, each
  at its published batch and input dtype (a saved ExportedProgram has fixed shapes:
  tileplan cannot re-batch it).

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /tmp/tv/bin/python tests/data/zoo/export.py
"""

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torchvision.models as models

NAMES = ("resnet18", "resnext50_32x4d", "mnasnet1_0", "mobilenet_v2", "googlenet", "inception_v3",
         "squeezenet1_1", "wide_resnet50_2")

#: torchvision's ImageNet normalisation, as graphcore/examples applications/pytorch/cnns
#: datasets (`normalization_parameters`) gives it to the model's input normalisation
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class NormalizedOnDevice(torch.nn.Module):
    """The model behind its input normalisation done on the device, as graphcore/examples
    applications/pytorch/cnns/models/models.py's `NormalizeInputModel` does with
    `normalization_location: ipu` and `eight_bit_io`: the uint8 image is cast to the
    model's precision, multiplied by 1 / (255 std) and less mean / std, per channel."""

    def __init__(self, model: torch.nn.Module, dtype: torch.dtype) -> None:
        super().__init__()
        self.model, self.dtype = model, dtype
        mean, std = torch.tensor(MEAN), torch.tensor(STD)
        self.scale = (1.0 / (255.0 * std)).view(-1, 1, 1).to(dtype)
        self.shift = (mean / std).view(-1, 1, 1).to(dtype)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return self.model(img.to(self.dtype).mul(self.scale).sub(self.shift))


@dataclass(frozen=True)
class Published:
    """A published configuration: torchvision's `model` at `batch`, in `dtype`, its
    input of `input_dtype` (uint8: normalised on the device, `NormalizedOnDevice`)."""

    file: str
    model: str
    batch: int
    dtype: torch.dtype
    input_dtype: torch.dtype
    source: str


PUBLISHED = (
    Published("resnet50_fp16_b90", "resnet50", 90, torch.float16, torch.uint8,
              "graphcore/examples applications/pytorch/cnns/inference/configs.yml resnet50-mk2 (precision 16.16, "
              "half_partial, eight_bit_io, normalization_location ipu, batch_size 90); models/models.py get_model"),
    Published("resnext50_32x4d_fp32_b20", "resnext50_32x4d", 20, torch.float32, torch.float32,
              "graphcore/tutorials tech_notes_code/available_memory/pytorch_demo.py (ResNextModel, batch_size 20, "
              "FP32 GeneratedDataset)"),
)


def save(program: torch.export.ExportedProgram, path: Path) -> None:
    raw = io.BytesIO()
    torch.export.save(program, raw)
    with zipfile.ZipFile(raw) as zi, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zo:
        for info in zi.infolist():
            if not info.filename.endswith("sample_inputs/model.pt"):
                zo.writestr(info.filename, zi.read(info.filename))
    print(path.name, path.stat().st_size)


def main() -> None:
    here = Path(__file__).parent
    for name in NAMES:
        kw = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        with torch.device("meta"):
            model = getattr(models, name)(weights=None, **kw).eval()
            x = torch.zeros(1, 3, 224, 224)
        save(torch.export.export(model, (x,)), here / f"{name}.pt2")
    for p in PUBLISHED:
        with torch.device("meta"):
            model = getattr(models, p.model)(weights=None).eval().to(p.dtype)
            if p.input_dtype == torch.uint8:
                model = NormalizedOnDevice(model, p.dtype).eval()
            x = torch.zeros(p.batch, 3, 224, 224, dtype=p.input_dtype)
        save(torch.export.export(model, (x,)), here / f"{p.file}.pt2")


if __name__ == "__main__":
    main()

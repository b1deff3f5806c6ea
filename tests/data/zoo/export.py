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


def efficientnet_g16_gn(arch: str) -> torch.nn.Module:
    """Graphcore's EfficientNet-G16-GN as graphcore/examples vision/cnns/pytorch builds it
    (configs.yml `efficientnet-g16-gn`: efficientnet_group_dim 16, efficientnet_expand_ratio
    4, norm_type group with 4 groups and eps 0.001; models/implementations/efficientnet.py
    `create_efficientnet`, `_common_efficientnet_manipulation`): EfficientNet's blocks with
    an expansion ratio of 4 instead of 6 (the first block's 1 kept), every depthwise
    convolution grouped by 16 channels (`groups=max(in_channels // 16, 1)`, the first
    block's too: `name_match(".*conv_dw")`), every BatchNorm2d a GroupNorm of 4 groups
    (models.py `get_model`, norm_type group), on torchvision's layers."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    width, depth, dropout = {"efficientnet_b0": (1.0, 1.0, 0.2), "efficientnet_b4": (1.4, 1.8, 0.4)}[arch]
    setting, last = _efficientnet_conf(arch, width_mult=width, depth_mult=depth)
    for cnf in setting:
        if cnf.expand_ratio == 6:
            cnf.expand_ratio = 4
    model = EfficientNet(setting, dropout, norm_layer=lambda c: torch.nn.GroupNorm(4, c, eps=0.001),
                         last_channel=last)
    for module in model.modules():
        for name, child in module.named_children():
            if (isinstance(child, torch.nn.Conv2d) and child.groups == child.in_channels == child.out_channels
                    and child.groups > 1):
                setattr(module, name, torch.nn.Conv2d(child.in_channels, child.out_channels, child.kernel_size,
                                                      child.stride, child.padding,
                                                      groups=max(child.in_channels // 16, 1), bias=False))
    return model


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
    #: the image's height and width
    size: int = 224
    #: Graphcore's modification of the model (`efficientnet_g16_gn`), else torchvision's own
    g16_gn: bool = False


PUBLISHED = (
    Published("resnet50_fp16_b90", "resnet50", 90, torch.float16, torch.uint8,
              "graphcore/examples applications/pytorch/cnns/inference/configs.yml resnet50-mk2 (precision 16.16, "
              "half_partial, eight_bit_io, normalization_location ipu, batch_size 90); models/models.py get_model"),
    Published("resnext50_32x4d_fp32_b20", "resnext50_32x4d", 20, torch.float32, torch.float32,
              "graphcore/tutorials tech_notes_code/available_memory/pytorch_demo.py (ResNextModel, batch_size 20, "
              "FP32 GeneratedDataset)"),
    Published("efficientnet_b0_fp16_b49", "efficientnet_b0", 49, torch.float16, torch.uint8,
              "graphcore/examples vision/cnns/pytorch/inference/configs.yml efficientnet-b0 (precision 16.16, "
              "half_partial, eight_bit_io, normalization_location ipu, batch_size 49); models/factory.py "
              "(timm's EfficientNet with EfficientNet-B0's blocks, expand ratio 6, depthwise: torchvision's layers)"),
    Published("efficientnet_b4_fp16_b12", "efficientnet_b4", 12, torch.float16, torch.uint8,
              "graphcore/examples vision/cnns/pytorch/inference/configs.yml efficientnet-b4 (the same, batch_size 12, "
              "input 380 x 380: models/factory.py)", size=380),
    Published("efficientnet_b0_g16_gn_fp16_b106", "efficientnet_b0", 106, torch.float16, torch.uint8,
              "graphcore/examples vision/cnns/pytorch/inference/configs.yml efficientnet-b0-g16-gn (the common "
              "settings, efficientnet-g16-gn's, batch_size 106)", g16_gn=True),
    Published("efficientnet_b4_g16_gn_fp16_b26", "efficientnet_b4", 26, torch.float16, torch.uint8,
              "graphcore/examples vision/cnns/pytorch/inference/configs.yml efficientnet-b4-g16-gn (the same, "
              "batch_size 26, input 380 x 380)", size=380, g16_gn=True),
    Published("resnext101_32x8d_fp16_b16", "resnext101_32x8d", 16, torch.float16, torch.uint8,
              "graphcore/examples applications/pytorch/cnns/inference/README_Benchmarks.md (b30108fb: ResNeXt-101, "
              "--precision 16.16 --half-partial --eight-bit-io --normalization-location ipu, batch 1 to 16, one Mk2 "
              "IPU a replica); models/models.py (resnext101: torchvision's resnext101_32x8d)"),
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
            model = (efficientnet_g16_gn(p.model) if p.g16_gn else getattr(models, p.model)(weights=None))
            model = model.eval().to(p.dtype)
            if p.input_dtype == torch.uint8:
                model = NormalizedOnDevice(model, p.dtype).eval()
            x = torch.zeros(p.batch, 3, p.size, p.size, dtype=p.input_dtype)
        save(torch.export.export(model, (x,)), here / f"{p.file}.pt2")


if __name__ == "__main__":
    main()

"""Writes the torchvision models of tests/data/zoo (see README.md there): each built on
the meta device (shapes, no weights), exported with torch.export at [1, 3, 224, 224]
as graphcore/poptorch tests/torchvision_inference_test.py runs them, saved, then
rewritten deflated without the sample inputs (a pickle tileplan never reads).

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /tmp/tv/bin/python tests/data/zoo/export.py
"""

import io
import zipfile
from pathlib import Path

import torch
import torchvision.models as models

NAMES = ("resnet18", "resnext50_32x4d", "mnasnet1_0", "mobilenet_v2", "googlenet", "inception_v3",
         "squeezenet1_1", "wide_resnet50_2")


def main() -> None:
    here = Path(__file__).parent
    for name in NAMES:
        kw = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        with torch.device("meta"):
            model = getattr(models, name)(weights=None, **kw).eval()
            x = torch.zeros(1, 3, 224, 224)
        raw = io.BytesIO()
        torch.export.save(torch.export.export(model, (x,)), raw)
        with zipfile.ZipFile(raw) as zi, zipfile.ZipFile(here / f"{name}.pt2", "w", zipfile.ZIP_DEFLATED,
                                                         compresslevel=9) as zo:
            for info in zi.infolist():
                if not info.filename.endswith("sample_inputs/model.pt"):
                    zo.writestr(info.filename, zi.read(info.filename))
        print(name, (here / f"{name}.pt2").stat().st_size)


if __name__ == "__main__":
    main()

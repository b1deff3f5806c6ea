"""Small torch definitions of published models for the Tenstorrent fidelity cases (no
weights: built on the meta device by the importer)."""

from __future__ import annotations

import torch
from torch import nn


def _block(channels_in: int, features: int) -> nn.Sequential:
    """Two 3x3 convolutions (padding 1, no bias), each with batch norm and ReLU."""
    return nn.Sequential(
        nn.Conv2d(channels_in, features, 3, padding=1, bias=False), nn.BatchNorm2d(features), nn.ReLU(inplace=True),
        nn.Conv2d(features, features, 3, padding=1, bias=False), nn.BatchNorm2d(features), nn.ReLU(inplace=True))


class VanillaUNet(nn.Module):
    """The "vanilla" UNet tt-xla's and tt-forge's model zoo runs (mateuszbuda/
    brain-segmentation-pytorch unet.py, `UNet(in_channels=3, out_channels=1,
    init_features=32)`): four encoder blocks with 2x2 max pooling, a bottleneck, four
    decoder blocks after 2x2 transposed convolutions and skip concatenations, a 1x1
    convolution and a sigmoid."""

    def __init__(self, in_channels: int = 3, out_channels: int = 1, init_features: int = 32) -> None:
        super().__init__()
        f = init_features
        self.encoder1, self.encoder2 = _block(in_channels, f), _block(f, 2 * f)
        self.encoder3, self.encoder4 = _block(2 * f, 4 * f), _block(4 * f, 8 * f)
        self.pool = nn.MaxPool2d(2, 2)
        self.bottleneck = _block(8 * f, 16 * f)
        self.upconv4, self.decoder4 = nn.ConvTranspose2d(16 * f, 8 * f, 2, stride=2), _block(16 * f, 8 * f)
        self.upconv3, self.decoder3 = nn.ConvTranspose2d(8 * f, 4 * f, 2, stride=2), _block(8 * f, 4 * f)
        self.upconv2, self.decoder2 = nn.ConvTranspose2d(4 * f, 2 * f, 2, stride=2), _block(4 * f, 2 * f)
        self.upconv1, self.decoder1 = nn.ConvTranspose2d(2 * f, f, 2, stride=2), _block(2 * f, f)
        self.conv = nn.Conv2d(f, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        enc1 = self.encoder1(x)
        enc2 = self.encoder2(self.pool(enc1))
        enc3 = self.encoder3(self.pool(enc2))
        enc4 = self.encoder4(self.pool(enc3))
        bottleneck = self.bottleneck(self.pool(enc4))
        dec4 = self.decoder4(torch.cat((self.upconv4(bottleneck), enc4), dim=1))
        dec3 = self.decoder3(torch.cat((self.upconv3(dec4), enc3), dim=1))
        dec2 = self.decoder2(torch.cat((self.upconv2(dec3), enc2), dim=1))
        dec1 = self.decoder1(torch.cat((self.upconv1(dec2), enc1), dim=1))
        return torch.sigmoid(self.conv(dec1))

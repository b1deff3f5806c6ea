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


class _Resnet(nn.Module):
    """diffusers models/resnet.py `ResnetBlock2D` as a VAE decoder builds it (no time
    embedding, output scale 1): GroupNorm(32), SiLU, 3x3 conv, twice; a 1x1 shortcut when
    the channels change."""

    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(32, channels_in, eps=1e-6)
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, 1, 1)
        self.norm2 = nn.GroupNorm(32, channels_out, eps=1e-6)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1)
        self.conv_shortcut = nn.Conv2d(channels_in, channels_out, 1) if channels_in != channels_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv2(nn.functional.silu(self.norm2(self.conv1(nn.functional.silu(self.norm1(x))))))
        return (x if self.conv_shortcut is None else self.conv_shortcut(x)) + h


class _Attention(nn.Module):
    """diffusers' VAE mid-block attention (attention_processor.py `Attention` with
    `AttnProcessor2_0`, one head of all the channels): GroupNorm(32), q / k / v / out
    projections over the H*W positions, scaled_dot_product_attention, the residual."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.group_norm = nn.GroupNorm(32, channels, eps=1e-6)
        self.to_q, self.to_k = nn.Linear(channels, channels), nn.Linear(channels, channels)
        self.to_v, self.to_out = nn.Linear(channels, channels), nn.Linear(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        y = self.group_norm(x).view(b, c, h * w).transpose(1, 2)
        q, k, v = (t.view(b, -1, 1, c).transpose(1, 2) for t in (self.to_q(y), self.to_k(y), self.to_v(y)))
        o = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, c)
        return self.to_out(o).transpose(-1, -2).reshape(b, c, h, w) + x


class _MidBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.resnets = nn.ModuleList([_Resnet(channels, channels), _Resnet(channels, channels)])
        self.attentions = nn.ModuleList([_Attention(channels)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.resnets[1](self.attentions[0](self.resnets[0](x)))


class _Upsample(nn.Module):
    """diffusers models/upsampling.py `Upsample2D`: nearest x2, then a 3x3 conv."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(nn.functional.interpolate(x, scale_factor=2.0, mode="nearest"))


class _UpBlock(nn.Module):
    def __init__(self, channels_in: int, channels: int, layers: int, upsample: bool) -> None:
        super().__init__()
        self.resnets = nn.ModuleList([_Resnet(channels_in if j == 0 else channels, channels)
                                      for j in range(layers + 1)])
        self.upsamplers = nn.ModuleList([_Upsample(channels)] if upsample else [])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for m in (*self.resnets, *self.upsamplers):
            x = m(x)
        return x


class VaeDecoder(nn.Module):
    """diffusers models/autoencoders/vae.py `Decoder` of an `AutoencoderKL` (SDXL's and
    Flux's: block_out_channels (128, 256, 512, 512), layers_per_block 2, GroupNorm(32)),
    with diffusers' module names: conv_in; mid_block (resnet, attention, resnet);
    up_blocks, four of three resnets, the first three followed by an `Upsample2D`;
    conv_norm_out, SiLU, conv_out to RGB. The latent channels: 4 (SDXL), 16 (Flux, Z-Image)."""

    def __init__(self, latent_channels: int = 4, channels: tuple[int, ...] = (128, 256, 512, 512),
                 layers: int = 2) -> None:
        super().__init__()
        rev = list(reversed(channels))
        self.conv_in = nn.Conv2d(latent_channels, rev[0], 3, 1, 1)
        self.mid_block = _MidBlock(rev[0])
        self.up_blocks = nn.ModuleList([_UpBlock(rev[max(i - 1, 0)], c, layers, i < len(rev) - 1)
                                        for i, c in enumerate(rev)])
        self.conv_norm_out = nn.GroupNorm(32, channels[0], eps=1e-6)
        self.conv_out = nn.Conv2d(channels[0], 3, 3, 1, 1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.mid_block(self.conv_in(z))
        for block in self.up_blocks:
            h = block(h)
        return self.conv_out(nn.functional.silu(self.conv_norm_out(h)))

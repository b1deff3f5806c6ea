"""The SigLIP builder: dimensions and parameter counts from the model cards."""

import pytest

from tileplan.errors import InputError
from tileplan.builtins import siglip
from tileplan.model.precision import Precision

F8 = Precision("F8F143", -4)


def test_so400m_parameter_counts():
    full = siglip.build_vit(siglip.config("siglip-so400m-patch14-384"), F8)
    assert full.parameter_count == 428_225_600
    one = siglip.build_vit(siglip.config("siglip-so400m-patch14-384", layers=1), F8)
    two = siglip.build_vit(siglip.config("siglip-so400m-patch14-384", layers=2), F8)
    assert two.parameter_count - one.parameter_count == 15_239_504


def test_so400m_dimensions():
    cfg = siglip.config("siglip-so400m-patch14-384")
    assert (cfg.tokens, cfg.patch_dim, cfg.hidden // cfg.heads) == (729, 588, 72)
    program = siglip.build_vit(cfg, F8)
    assert program.tensor("vit.image.patches").shape == (1, 729, 588)
    assert program.tensor("vit.encoder.layer26.mlp.down.weight").shape == (4304, 1152)
    assert program.tensor("vit.map.attention.kv.weight").shape == (1152, 2304)
    assert program.tensor("vit.position").precision == Precision("F16")
    assert program.tensor("vit.encoder.layer0.attention.qkv.weight").precision == F8


def test_base_has_196_patches_and_no_map_head_option():
    cfg = siglip.config("siglip-base-patch16-224", map_head=False)
    program = siglip.build_vit(cfg, Precision("F16"))
    assert cfg.tokens == 196
    assert not any(t.name.startswith("vit.map.") for t in program.tensors)


def test_unknown_model_names_the_choices():
    with pytest.raises(InputError, match="unknown model 'vit-g'; expected one of siglip-base-patch16-224"):
        siglip.config("vit-g")

"""The splitter (`tileplan.model.stages`): each operation's section from its layer, the
one tied-head rule, the IPU of each section, for inference and training alike."""

from __future__ import annotations

import pytest

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.model.precision import F16
from tileplan.model.stages import POST, PRE, Placement, head_start, sections


def op(name: str, module: str | None, *inputs: str, layer: int | None = None) -> Operation:
    return Operation(0, 0, "add", name, inputs, name, (1,), F16, module=module, layer=layer)


def test_sections_come_from_the_layers_and_what_lies_between_goes_with_the_next():
    layers = [None, None, 0, 0, None, 1, 1, None, None]  # T5: the encoder's final norm before the decoder's block
    assert sections(layers) == [PRE, PRE, 0, 0, 1, 1, 1, POST, POST]
    assert sections([None, None]) == [PRE, PRE]  # no layer: nothing to split
    assert sections([]) == []


def gpt2_like():
    before = [op("wte", "transformer.wte", "ids", "transformer.wte.weight")]
    last = [op("attn", "transformer.h.1.attn", "x", layer=1), op("res", "transformer.h.1", "attn", layer=1)]
    after = [op("ln_f", "transformer.ln_f", "res"), op("view", "transformer", "ln_f"), op("slice", "", "view"),
             op("logits", "lm_head", "slice", "transformer.wte.weight"), op("loss", "", "logits")]
    return before, last, after


def test_a_tied_head_starts_at_the_head_module_not_at_the_layers_final_norm():
    """GPT-2's final norm runs where the last layer does; the model's own slice between
    them starts nothing; the LM head, reading the embedding's weight, starts the head."""
    before, last, after = gpt2_like()
    assert head_start(before, last, after, {"transformer.wte.weight"}) == 3
    assert head_start(before, last, after, set()) is None  # a shared constant ties nothing
    untied = [o if o.name != "logits" else op("logits", "lm_head", "slice", "lm_head.weight") for o in after]
    assert head_start(before, last, untied, {"transformer.wte.weight", "lm_head.weight"}) is None


def test_bert_pretrainings_pooler_starts_its_head():
    """BERT's pooler and prediction heads run on IPU 0 (Graphcore's BERT: "Pooler -->
    IPU 0", "Classifier --> IPU 0"): the pooler, first after the encoder and outside
    it, starts the head though the decoder is what reads the embedding's weight."""
    before = [op("emb", "bert.embeddings.word_embeddings", "ids", "word")]
    last = [op("ffn", "bert.encoder.layer.3.output.dense", "x", layer=3)]
    after = [op("pool", "bert.pooler.dense", "ffn"), op("transform", "cls.predictions.transform.dense", "ffn"),
             op("decoder", "cls.predictions.decoder", "transform", "word"), op("nsp", "cls.seq_relationship", "pool")]
    assert head_start(before, last, after, {"word"}) == 0


def test_without_modules_the_head_starts_where_the_tied_weight_is_read():
    before = [op("emb", None, "ids", "word")]
    after = [op("norm", None, "x"), op("logits", None, "norm", "word")]
    assert head_start(before, [op("layer", None, "x", layer=0)], after, {"word"}) == 1


def test_a_placement_puts_each_section_on_its_ipu():
    p = Placement((0, 2, 3))
    assert [p.ipu(PRE), p.ipu(POST), p.ipu(POST, head=True)] == [0, 2, 0]
    assert [p.ipu(layer) for layer in range(5)] == [1, 1, 2, 2, 2]
    assert [p.first(k) for k in range(3)] == [0, 0, 2]
    with pytest.raises(ModelError, match="layer 5 is past the 5 layers"):
        p.ipu(5)
    with pytest.raises(ModelError, match="must be non-negative"):
        Placement((2, -1))

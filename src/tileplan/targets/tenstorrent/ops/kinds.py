"""The TTNN operations tileplan prices, by the name ttnn gives them (`ttnn.relu`,
`ttnn.matmul`, `ttnn.experimental.nlp_concat_heads`, ...). The registry
(`tileplan.targets.tenstorrent.ops.REGISTRY`) maps each to its rule; nothing
dispatches on strings."""

from __future__ import annotations

from enum import Enum


class OpKind(Enum):
    """A TTNN operation."""

    # unary eltwise (unary_program_factory.cpp)
    RELU = "ttnn.relu"
    RELU6 = "ttnn.relu6"
    SILU = "ttnn.silu"
    GELU = "ttnn.gelu"
    SIGMOID = "ttnn.sigmoid"
    HARDSIGMOID = "ttnn.hardsigmoid"
    EXP = "ttnn.exp"
    EXPM1 = "ttnn.expm1"
    LOG = "ttnn.log"
    LOG1P = "ttnn.log1p"
    SQRT = "ttnn.sqrt"
    RSQRT = "ttnn.rsqrt"
    RECIPROCAL = "ttnn.reciprocal"
    TANH = "ttnn.tanh"
    SIN = "ttnn.sin"
    COS = "ttnn.cos"
    TAN = "ttnn.tan"
    ATAN = "ttnn.atan"
    ABS = "ttnn.abs"
    NEG = "ttnn.neg"
    SIGN = "ttnn.sign"
    CEIL = "ttnn.ceil"
    FLOOR = "ttnn.floor"
    ERF = "ttnn.erf"
    ERFC = "ttnn.erfc"
    ISFINITE = "ttnn.isfinite"
    LOGICAL_NOT = "ttnn.logical_not"
    BITWISE_NOT = "ttnn.bitwise_not"
    HARDSHRINK = "ttnn.hardshrink"
    CBRT = "ttnn.cbrt"
    LOGIT = "ttnn.logit"
    TYPECAST = "ttnn.typecast"
    # binary eltwise (binary_ng_program_factory.cpp)
    ADD = "ttnn.add"
    SUBTRACT = "ttnn.subtract"
    MULTIPLY = "ttnn.multiply"
    DIVIDE = "ttnn.divide"
    MAXIMUM = "ttnn.maximum"
    MINIMUM = "ttnn.minimum"
    EQ = "ttnn.eq"
    NE = "ttnn.ne"
    GT = "ttnn.gt"
    GE = "ttnn.ge"
    LT = "ttnn.lt"
    LE = "ttnn.le"
    LOGICAL_AND = "ttnn.logical_and"
    LOGICAL_OR = "ttnn.logical_or"
    LOGICAL_XOR = "ttnn.logical_xor"
    BITWISE_AND = "ttnn.bitwise_and"
    BITWISE_OR = "ttnn.bitwise_or"
    BITWISE_XOR = "ttnn.bitwise_xor"
    SQUARED_DIFFERENCE = "ttnn.squared_difference"
    LDEXP = "ttnn.ldexp"
    LOGADDEXP = "ttnn.logaddexp"
    LOGADDEXP2 = "ttnn.logaddexp2"
    BIAS_GELU = "ttnn.bias_gelu"
    POW = "ttnn.pow"
    # reductions (reduce_op_multi_core_{w,h}_program_factory.cpp)
    SUM = "ttnn.sum"
    MEAN = "ttnn.mean"
    MAX = "ttnn.max"
    MIN = "ttnn.min"
    # matmul
    MATMUL = "ttnn.matmul"
    LINEAR = "ttnn.linear"
    # normalization
    SOFTMAX = "ttnn.softmax"
    LAYER_NORM = "ttnn.layer_norm"
    RMS_NORM = "ttnn.rms_norm"
    # transformer
    SDPA = "ttnn.transformer.scaled_dot_product_attention"
    SDPA_DECODE = "ttnn.transformer.scaled_dot_product_attention_decode"
    NLP_CONCAT_HEADS = "ttnn.experimental.nlp_concat_heads"
    SPLIT_QKV = "ttnn.transformer.split_query_key_value_and_split_heads"
    # embedding
    EMBEDDING = "ttnn.embedding"
    # convolution
    CONV2D = "ttnn.conv2d"
    CONV3D = "ttnn.experimental.conv3d"
    HALO = "ttnn.halo"
    # data movement
    TILIZE = "ttnn.tilize"
    UNTILIZE = "ttnn.untilize"
    TO_LAYOUT = "ttnn.to_layout"
    RESHAPE = "ttnn.reshape"
    PERMUTE = "ttnn.permute"
    TRANSPOSE = "ttnn.transpose"
    CONCAT = "ttnn.concat"

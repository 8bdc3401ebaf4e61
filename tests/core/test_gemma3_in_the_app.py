"""Gemma 3 270M through the app's own seam: a config that names it runs every stage in the
engine (RMSNorm, q/k norms, RoPE with the layer's base, the local window, MQA) and gives the
model's own attention maps, for a local and a global layer; the command line's contracts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mha_explorer import cli
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]
GEMMA = MODELS["gemma3-270m"]
TEXT = "The cat sat on the mat. The cat sat on the"


def _config(layer: int) -> MHAConfig:
    from mha_explorer.core.models.gemma3.pieces import as_pieces

    pieces = as_pieces(TEXT.split())
    return MHAConfig(**trained_fields(GEMMA, layer), weights=GEMMA.key, layer=layer, tokens=pieces,
                     seq=len(pieces), batch=1, device="cpu")


@pytest.mark.parametrize("layer", [1, 6])  # local (window 512, base 1e4) and global (base 1e6)
def test_every_stage_of_a_layer_gives_the_models_own_maps(layer):
    from mha_explorer.core.engine import runner as engine
    from mha_explorer.core.models.gemma3.model import load_model
    from mha_explorer.core.models.gemma3.pieces import token_ids

    cfg = _config(layer)
    assert (cfg.variant, cfg.d_k, cfg.q_dim, cfg.norms) == ("MQA", 256, 1024, True)
    assert cfg.window == (None if GEMMA.layer_kind(layer) == "global" else 512)
    assert cfg.positions_spec.rope_base == GEMMA.rope_base(layer)
    trace = engine.run(cfg, mode="full")
    acts = load_model().run(token_ids(cfg.tokens)).layer(layer)
    np.testing.assert_allclose(trace.tensors["softmax"]["weights"][0], acts.probs[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.tensors["qk_norm"]["Q"][0], acts.q_normed[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.tensors["rope"]["Q"][0], acts.q_rope[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.tensors["norm"]["X"][0], acts.attn_in[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.output[0], acts.attn_proj[0].numpy(), atol=1e-3)


def test_a_config_names_the_model_and_its_layers_shape():
    with pytest.raises(Exception) as err:
        _config(6).replace(window=512)  # layer 6 is global
    assert "global" in str(err.value) or "whole text" in str(err.value)


def test_heads_and_decode_keep_their_json_contracts(capsys):
    assert cli.main(["heads", "--weights", GEMMA.key, "--layer", "6", "--sentence", TEXT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["token_ids"][0] == 2 and report["tokens"][0] == "<bos>"
    assert len(report["heads"]) == 4 and {"previous_token", "first_token", "induction"} <= set(
        report["heads"][0]["patterns"])
    assert cli.main(["decode", "--weights", GEMMA.key, "--text", "The capital of France is", "--steps", "3",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["token_ids"]) == out["prompt_tokens"] + 3 and len(out["steps"]) == 3
    assert all(len(s["cache_tokens"]) == GEMMA.layers for s in out["steps"])


def test_an_encoder_or_a_missing_text_is_one_line(capsys):
    assert cli.main(["decode", "--weights", "minilm-l6", "--text", "hi"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert cli.main(["decode", "--weights", GEMMA.key]) == 2
    assert "--text" in capsys.readouterr().err

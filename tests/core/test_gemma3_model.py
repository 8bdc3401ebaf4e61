"""The app's Gemma 3 270M forward pass and generation against transformers' Gemma3ForCausalLM.

The reference is ``transformers.Gemma3ForCausalLM`` built from the app's description
(``Gemma3TextConfig``: layer kinds, window, RoPE bases, query_pre_attn_scalar, eager
attention) and loaded with the app's converted tensors mapped to transformers' names
(RMSNorm weights as scale − 1, since transformers multiplies by 1 + w). It shares no
code with the app's forward pass, so equal attention maps, hidden states, logits and
greedy tokens mean the app computes what the model computes. transformers' own GGUF
loading is not used (it takes minutes).

Each text is continued by the app's cached generation (10 greedy tokens); one
transformers pass over prompt + continuation then checks the maps, the hidden
states and, at each generated position, that transformers' likeliest token is the
one the app made. One text is longer than 512 tokens, so the local layers' window
and the rolling cache are exercised.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]
torch = pytest.importorskip("torch")

ATOL = 1e-4
_SUBJECTS = ("river", "teacher", "engine", "garden", "market", "letter", "mountain", "window")
_VERBS = ("crossed", "opened", "painted", "carried", "followed", "measured", "answered", "remembered")
LONG = " ".join(f"In year {1900 + i}, the {_SUBJECTS[i % 8]} {_VERBS[(i * 3) % 8]} the "
                f"{_SUBJECTS[(i * 5 + 1) % 8]} near the old {_SUBJECTS[(i + 3) % 8]}." for i in range(30))
TEXTS = {  # text -> greedy steps checked
    "The capital of France is": 10,
    "Ünïcödé, emoji 😀 and   spaces\n\ttabs 12345.": 3,
    "def f(x):\n    return x * 2\n\nprint(f(21))": 3,
    LONG: 10,  # more than 512 tokens: local layers drop the oldest keys, the cache rolls
}
_HF_NAMES = {
    "attn_norm.scale": "input_layernorm.weight", "q_proj.weight": "self_attn.q_proj.weight",
    "k_proj.weight": "self_attn.k_proj.weight", "v_proj.weight": "self_attn.v_proj.weight",
    "o_proj.weight": "self_attn.o_proj.weight", "q_norm.scale": "self_attn.q_norm.weight",
    "k_norm.scale": "self_attn.k_norm.weight", "post_attn_norm.scale": "post_attention_layernorm.weight",
    "mlp_norm.scale": "pre_feedforward_layernorm.weight", "gate_proj.weight": "mlp.gate_proj.weight",
    "up_proj.weight": "mlp.up_proj.weight", "down_proj.weight": "mlp.down_proj.weight",
    "post_mlp_norm.scale": "post_feedforward_layernorm.weight",
}


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.gemma3.model import load_model

    return load_model()


def _config(transformers):
    from mha_explorer.core.models.gemma3.description import (
        D_FF,
        GEMMA3_270M,
        QUERY_PRE_ATTN_SCALAR,
        RMS_NORM_EPS,
    )

    d = GEMMA3_270M
    config = transformers.Gemma3TextConfig(
        vocab_size=d.vocab_size, hidden_size=d.d_model, intermediate_size=D_FF, num_hidden_layers=d.layers,
        num_attention_heads=d.heads, num_key_value_heads=d.kv_heads, head_dim=d.head_dim,
        rms_norm_eps=RMS_NORM_EPS, query_pre_attn_scalar=QUERY_PRE_ATTN_SCALAR, sliding_window=d.window,
        layer_types=["sliding_attention" if kind == "local" else "full_attention" for kind in d.layer_kinds],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": d.rope_bases["global"]},
                         "sliding_attention": {"rope_type": "default", "rope_theta": d.rope_bases["local"]}},
        max_position_embeddings=d.max_tokens, tie_word_embeddings=True, bos_token_id=2, eos_token_id=1,
        pad_token_id=0)
    config._attn_implementation = "eager"  # returns the attention probabilities
    return config


@pytest.fixture(scope="module")
def reference(ours):
    """transformers' Gemma3ForCausalLM holding the app's tensors (shared, not copied)."""
    transformers = pytest.importorskip("transformers")
    try:  # random initialisation of 270M weights that are replaced anyway takes seconds
        from transformers.initialization import no_init_weights
    except ImportError:
        from contextlib import nullcontext as no_init_weights
    with no_init_weights():
        model = transformers.Gemma3ForCausalLM(_config(transformers))
    state = {"model.embed_tokens.weight": ours.t["embed.weight"], "lm_head.weight": ours.t["embed.weight"],
             "model.norm.weight": ours.t["norm.scale"] - 1}
    for name, tensor in ours.t.items():
        if name.startswith("layers."):
            _, index, rest = name.split(".", 2)
            hf_name = f"model.layers.{index}.{_HF_NAMES[rest]}"
            state[hf_name] = tensor - 1 if rest.endswith(".scale") else tensor
    model.load_state_dict(state, assign=True, strict=True)
    return model.eval()


@dataclass(frozen=True)
class Pair:
    """One text continued by the app, and both models' passes over prompt + continuation."""

    prompt_len: int
    made: object  # the app's Generation
    probs: torch.Tensor  # [layers, H, T, T] the app's full pass
    hidden_in: torch.Tensor  # [layers, T, D] what enters each layer
    logits: torch.Tensor  # [steps + 1, vocab] the app's, at the positions transformers kept
    ref: object  # transformers' output


@pytest.fixture(scope="module", params=list(TEXTS), ids=["france", "unicode", "code", "long"])
def pair(request, ours, reference):
    from mha_explorer.core.models.gemma3.generate import generate

    prompt, _ = ours.encode(request.param)
    steps = TEXTS[request.param]
    made = generate(ours, prompt, steps, attention="all", stop_at_eos=False)
    ids = made.token_ids
    run = ours.run(ids)
    layers = [run.layer(layer) for layer in range(1, 19)]  # each computed once, from the one before
    with torch.inference_mode():
        logits = ours.final_logits(layers[-1].hidden_out[0, -(steps + 1):])  # [steps + 1, vocab]
    with torch.no_grad():
        ref = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True,
                        logits_to_keep=steps + 1)
    return Pair(len(prompt), made, torch.stack([a.probs[0] for a in layers]),
                torch.stack([a.hidden_in[0] for a in layers]), logits, ref)


def test_every_heads_attention_matches_transformers(pair):
    for layer in range(1, 19):
        torch.testing.assert_close(pair.probs[layer - 1], pair.ref.attentions[layer - 1][0], atol=ATOL,
                                   rtol=0, msg=f"layer {layer}")


def test_hidden_states_and_logits_match_transformers(pair):
    for layer in range(1, 19):  # transformers' hidden_states[L-1] is what enters layer L
        torch.testing.assert_close(pair.hidden_in[layer - 1], pair.ref.hidden_states[layer - 1][0],
                                   atol=1e-3, rtol=1e-4, msg=f"layer {layer}")
    torch.testing.assert_close(pair.logits, pair.ref.logits[0], atol=1e-3, rtol=1e-4)


def test_greedy_tokens_equal_transformers_greedy_choice(pair):
    """At every step transformers' likeliest next token, given the same prefix, is the token
    the app's cached generation made: so transformers' greedy generation makes these tokens."""
    chosen = pair.ref.logits[0, :-1].argmax(-1).tolist()  # after positions P-1 .. P+steps-2
    assert [s.token_id for s in pair.made.steps] == chosen
    assert pair.made.token_ids[pair.prompt_len:] == chosen


def test_cached_steps_read_what_the_full_pass_reads(pair):
    """Each step's attention row (over the keys its layer's cache kept) equals the same query's
    row in one full pass over the whole text, for every layer."""
    for step in pair.made.steps:
        for layer, row in step.attention.items():
            full = pair.probs[layer - 1, :, step.position]  # [H, T]
            assert row.key_positions[-1] == step.position
            torch.testing.assert_close(torch.from_numpy(row.weights), full[:, row.key_positions], atol=1e-5,
                                       rtol=0)
            rest = full.clone()
            rest[:, row.key_positions] = 0
            assert float(rest.abs().max()) == 0  # the keys a local layer dropped had no weight left


def test_the_cache_rolls_on_local_layers_and_grows_on_global_ones(pair, ours):
    d = ours.description
    for step in pair.made.steps:
        seen = step.position + 1  # every token up to the one fed in
        expected = [min(seen, d.window) if d.layer_kind(layer) == "local" else seen
                    for layer in range(1, d.layers + 1)]
        assert list(step.cache_tokens) == expected
        assert list(step.cache_bytes) == [n * 2 * d.kv_heads * d.head_dim * 4 for n in expected]  # K and V
        assert step.model_cache_bytes == sum(step.cache_bytes)
        assert step.text == ours.tokenizer.decode([step.token_id])


def test_local_layers_see_only_the_last_512_tokens(ours):
    ids, _ = ours.encode(LONG)
    T = len(ids)
    assert T > 512 + 16, "the long text must exceed the window"
    gap = torch.arange(T)[:, None] - torch.arange(T)[None, :]  # [T, T] how far back each key is
    for layer in (1, 6):
        a = ours.run(ids).layer(layer)
        far = a.probs[0][:, gap >= 512]
        if ours.description.layer_kind(layer) == "local":
            assert torch.count_nonzero(far) == 0
            assert (a.scores[0][:, gap >= 512] == float("-inf")).all()
        else:
            assert torch.count_nonzero(far) > 0.9 * far.numel()  # a global layer still reads them


def test_activations_have_their_documented_shapes(ours):
    ids, _ = ours.encode("Every activation has a name")
    T, D, H, hd = len(ids), 640, 4, 256
    a = ours.run(ids).layer(6)
    shapes = {"hidden_in": (1, T, D), "attn_in": (1, T, D), "q": (1, T, H * hd), "k": (1, T, hd),
              "v": (1, T, hd), "q_normed": (1, H, T, hd), "k_normed": (1, 1, T, hd), "q_rope": (1, H, T, hd),
              "k_rope": (1, 1, T, hd), "scores": (1, H, T, T), "probs": (1, H, T, T),
              "context": (1, H, T, hd), "merged": (1, T, H * hd),
              "attn_proj": (1, T, D), "attn_out": (1, T, D), "resid_mid": (1, T, D), "mlp_out": (1, T, D),
              "hidden_out": (1, T, D)}
    for name, shape in shapes.items():
        assert tuple(getattr(a, name).shape) == shape, name
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    assert (a.scores[0][:, future] == float("-inf")).all() and (a.probs[0][:, future] == 0).all()
    torch.testing.assert_close(a.probs.sum(-1), torch.ones(1, H, T))
    torch.testing.assert_close(a.merged, a.context.transpose(1, 2).reshape(1, T, H * hd))
    torch.testing.assert_close(a.resid_mid + a.mlp_out, a.hidden_out)
    assert torch.equal(ours.run(ids).layer(7).hidden_in, a.hidden_out)


def test_attention_weights_are_in_linear_layout_and_reproduce_q(ours):
    w = ours.attention_weights(3)
    assert {k: tuple(v.shape) for k, v in w.items()} == {
        "W_Q": (1024, 640), "W_K": (256, 640), "W_V": (256, 640), "W_O": (640, 1024), "q_norm": (256,),
        "k_norm": (256,)}
    ids, _ = ours.encode("Weights in nn.Linear layout")
    a = ours.run(ids).layer(3)
    torch.testing.assert_close(a.attn_in @ w["W_Q"].T, a.q)
    torch.testing.assert_close(a.attn_in @ w["W_V"].T, a.v)
    info = ours.layer_info(3)
    assert (info.kind, info.window, info.rope_base, info.scale) == ("local", 512, 10_000.0, 1 / 16)
    assert ours.layer_info(12).window is None and ours.layer_info(12).rope_base == 1e6


def test_a_layer_computes_only_the_layers_before_it(ours, monkeypatch):
    calls = []
    real = type(ours).layer
    monkeypatch.setattr(type(ours), "layer",
                        lambda self, layer, x: calls.append(layer) or real(self, layer, x))
    run = ours.run(ours.encode("Only as far as asked, and no further")[0])
    run.layer(3)
    assert calls == [1, 2, 3]
    run.layer(2)
    assert calls == [1, 2, 3]  # kept, not recomputed


def test_cancel_stops_between_layers_and_keeps_what_was_done(ours, monkeypatch):
    from mha_explorer.core.models.progress import Cancelled

    calls = []
    real = type(ours).layer
    monkeypatch.setattr(type(ours), "layer",
                        lambda self, layer, x: calls.append(layer) or real(self, layer, x))
    run = ours.run(ours.encode("Cancel me after the fourth layer")[0])
    with pytest.raises(Cancelled):
        run.layer(18, cancel=lambda: len(calls) >= 4)
    assert calls == [1, 2, 3, 4]
    run.layer(4)
    assert calls == [1, 2, 3, 4]


def test_attention_maps_alone_equal_the_full_run(ours):
    ids, _ = ours.encode("The cheap way gives the same seventy-two maps")
    maps = ours.attention_maps(ids)
    assert tuple(maps.shape) == (18, 4, len(ids), len(ids))
    for layer in (1, 9, 18):
        assert torch.equal(maps[layer - 1], ours.run(ids).layer(layer).probs[0])


def test_weights_read_equal_those_safetensors_reads(ours):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    from mha_explorer.core.models.gemma3 import convert

    stored = safetensors_torch.load_file(str(convert.prepare().weights))
    assert stored.keys() == ours.t.keys() and len(stored) == 236
    for name, tensor in stored.items():
        assert torch.equal(tensor, ours.t[name]), name


def test_bad_input_is_refused_in_one_line(ours):
    with pytest.raises(ValueError, match="layers 1 to 18"):
        ours.attention_weights(19)
    with pytest.raises(ValueError, match="no tokens"):
        ours.run([])
    with pytest.raises(ValueError, match="0..262143"):
        ours.run([2, 262144])

"""SmolLM2-135M-Instruct in the app against transformers' LlamaForCausalLM read from the same
GGUF file (``from_pretrained(folder, gguf_file=...)``, eager attention).

transformers reads the file with its own code: it dequantises the tensors, turns W_Q and W_K
back from llama.cpp's interleaved rotation layout, and builds its tokenizer from the file's
tokens and merges. Sharing nothing with the app, equal tokens, attention maps and greedy
tokens mean the app computes what the model computes. The reference is loaded once for the
module (about a minute); the texts are short, and MHA_LONG_CHECKS=1 adds a long one.
"""

from __future__ import annotations

import os

import pytest

from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available

SMOLLM2 = MODELS["smollm2-135m"]
AVAILABLE, WHY = is_available(SMOLLM2)
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)
torch = pytest.importorskip("torch")

ATOL = 1e-4
LONG = os.environ.get("MHA_LONG_CHECKS") == "1"
TEXTS = {
    "colours": "The three primary colours of light are",
    "unicode": "Ünïcödé — naïve café 😀, 日本語 and   spaces\n\ttabs",
    "numbers": "In 1984, 3.14159 × 2 = 6.28318; then 1,000,000 more.",
    "code": "def f(x):\n    return {'a': x ** 2}  # comment\n",
}
if LONG:
    TEXTS["long"] = " ".join(f"In year {1900 + i} the river {('crossed', 'opened', 'carried')[i % 3]} the "
                             f"old bridge number {i * 7}." for i in range(60))
AWKWARD = (*TEXTS.values(), "", "  two leading spaces and one trailing ", "new\nline\n\n\nthree\r\n",
           "emoji 👩‍👩‍👧 flag 🇫🇷 keycap 1️⃣", "control \x00 \x01 \x7f zero-width\u200bspace",
           "<|im_start|>user\nhello<|im_end|>\n", "https://example.org/path?q=1&r=two#frag")


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.decoder.kit import kit_for

    return kit_for(SMOLLM2).load_model()


def _gguf():
    from mha_explorer.core.models.smollm2 import files

    path = files.gguf_path()
    return str(path.parent), path.name


@pytest.fixture(scope="module")
def reference():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")  # transformers needs it to read a GGUF file
    folder, name = _gguf()
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                              attn_implementation="eager")
    assert type(model).__name__ == "LlamaForCausalLM"
    return model.eval()


@pytest.fixture(scope="module")
def reference_tokenizer():
    transformers = pytest.importorskip("transformers")
    folder, name = _gguf()
    return transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)


@pytest.mark.parametrize("text", AWKWARD, ids=[repr(t[:20]) for t in AWKWARD])
def test_token_ids_equal_transformers(ours, reference_tokenizer, text):
    ids, labels = ours.encode(text)
    assert ids == reference_tokenizer(text)["input_ids"]  # no first token: the tokenizer adds none
    assert len(labels) == len(ids)
    assert ours.tokenizer.decode(ids) == text
    assert [ours.tokenizer.token_id(label) for label in labels] == ids  # every label leads back


def test_the_weights_are_transformers_own_with_q_and_k_turned_back(ours, reference):
    """W_Q and W_K as transformers holds them (rows in the half-split rotation layout); in the
    file's own order they differ, so the turn back is what makes the maps right."""
    from mha_explorer.core.models.decoder.conversion import unpermute_rows

    for layer in (1, 30):
        w = ours.attention_weights(layer)
        attn = reference.model.layers[layer - 1].self_attn
        for ours_w, theirs, heads in ((w["W_Q"], attn.q_proj.weight, 9), (w["W_K"], attn.k_proj.weight, 3)):
            torch.testing.assert_close(ours_w, theirs, atol=0, rtol=0)
            # llama.cpp's order: each head's halves interleaved
            as_stored = ours_w.view(heads, 2, 32, 576).transpose(1, 2).reshape(heads * 64, 576)
            assert not torch.equal(as_stored, ours_w)
            assert torch.equal(torch.from_numpy(unpermute_rows(as_stored.numpy(), heads)), ours_w)
        torch.testing.assert_close(w["W_O"], attn.o_proj.weight, atol=0, rtol=0)
    assert torch.equal(ours.unembedding(), reference.lm_head.weight)


@pytest.fixture(scope="module", params=list(TEXTS))
def pair(request, ours, reference):
    ids, _ = ours.encode(TEXTS[request.param])
    run = ours.run(ids)
    layers = [run.layer(layer) for layer in range(1, SMOLLM2.layers + 1)]
    with torch.no_grad():
        ref = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    return ids, layers, run.logits(), ref


def test_every_heads_attention_equals_transformers(pair):
    _, layers, _, ref = pair
    for a in layers:
        torch.testing.assert_close(a.probs[0], ref.attentions[a.layer - 1][0], atol=ATOL, rtol=0,
                                   msg=f"layer {a.layer}")


def test_hidden_states_and_logits_equal_transformers(pair):
    _, layers, logits, ref = pair
    for a in layers:  # transformers' hidden_states[L - 1] is what enters layer L
        torch.testing.assert_close(a.hidden_in[0], ref.hidden_states[a.layer - 1][0], atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(logits, ref.logits[0], atol=1e-3, rtol=1e-4)


def test_greedy_generation_equals_transformers_for_16_tokens(ours, reference):
    from mha_explorer.core.models.decoder.generate import generate

    ids, _ = ours.encode(TEXTS["colours"])
    made = generate(ours, ids, 16, stop_at_eos=False)
    with torch.no_grad():
        theirs = reference.generate(torch.tensor([ids]), max_new_tokens=16, min_new_tokens=16,
                                    do_sample=False)
    assert made.token_ids == theirs[0].tolist()


def test_cached_steps_read_what_the_full_pass_reads(ours):
    from mha_explorer.core.models.decoder.generate import generate

    ids, _ = ours.encode(TEXTS["numbers"])
    made = generate(ours, ids, 4, attention="all", stop_at_eos=False)
    maps = ours.attention_maps(made.token_ids)  # [layers, H, T, T]: one full pass
    for step in made.steps:
        assert list(step.cache_tokens) == [step.position + 1] * SMOLLM2.layers  # every layer global
        assert step.cache_bytes[0] == (step.position + 1) * 2 * SMOLLM2.kv_heads * SMOLLM2.head_dim * 4
        for layer, row in step.attention.items():
            full = maps[layer - 1, :, step.position, : step.position + 1]  # [H, S]
            torch.testing.assert_close(torch.from_numpy(row.weights), full, atol=1e-5, rtol=0)


def test_nine_query_heads_read_three_key_value_heads(ours):
    """Query heads 3k..3k+2 score against K/V head k: the grouping GQA means."""
    ids, _ = ours.encode(TEXTS["colours"])
    a = ours.run(ids).layer(12)
    scale = SMOLLM2.head_dim ** -0.5
    for h in range(SMOLLM2.heads):
        scores = a.q_rope[0, h] @ a.k_rope[0, h // 3].T * scale  # [T, T]
        visible = torch.tril(torch.ones_like(scores, dtype=torch.bool))
        torch.testing.assert_close(scores[visible], a.scores[0, h][visible], atol=1e-4, rtol=1e-5)


def test_the_final_norm_and_the_input_are_transformers_own(ours, reference):
    """What the logit lens reads: the final RMSNorm as a multiplier, the embedding, the unembedding."""
    ids, _ = ours.encode(TEXTS["code"])
    embedded = reference.model.embed_tokens(torch.tensor(ids))
    torch.testing.assert_close(ours.embed(ids)[0], embedded, atol=0, rtol=0)
    hidden = ours.run(ids).hidden_out(15)  # [1, T, D], the residual stream half-way
    with torch.no_grad():
        torch.testing.assert_close(hidden * ours.final_norm_scale(hidden), reference.model.norm(hidden),
                                   atol=1e-5, rtol=1e-5)

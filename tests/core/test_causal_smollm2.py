"""The causal tools on SmolLM2-135M (grouped-query attention: 9 query heads reading 3 key/value
heads; no first token; no post-norms) against transformers' LlamaForCausalLM read from the same
GGUF file, edited and read through hooks of this test's own.

A head is its slice of o_proj's input, whatever key/value head it reads: the reference zeroes,
averages or patches those columns with a pre-hook on ``o_proj``; the lens reads every decoder
layer's output with a forward hook and applies transformers' final norm and output layer; the
attribution's parts are rebuilt from ``o_proj``'s input and each layer's ``mlp`` output (Llama
adds both to the stream as they are). Losses, fractions, probabilities and logits agree within
``ATOL``.

One layer's heads are compared by default (the reference takes about half a minute to load and
each of its passes a tenth of a second or more); ``MHA_EXPLORER_CAUSAL_FULL=1`` compares all 270.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from causal_hooks import forward_logits, mean_nats, merged_inputs, o_proj_input
from test_smollm2_model import SMOLLM2, reference  # noqa: F401 - the checked model and its reference

from mha_explorer.cli import main
from mha_explorer.core.models.causal.example import ANSWER, CLEAN, CORRUPT, WRONG
from mha_explorer.core.models.runtime import is_available

AVAILABLE, WHY = is_available(SMOLLM2)
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)
torch = pytest.importorskip("torch")
F = torch.nn.functional

ATOL = 2e-3
FULL = os.environ.get("MHA_EXPLORER_CAUSAL_FULL") == "1"
LAYERS = range(1, SMOLLM2.layers + 1) if FULL else (24,)  # a layer whose heads move the names most
H, HD = SMOLLM2.heads, SMOLLM2.head_dim


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.decoder.kit import kit_for

    return kit_for(SMOLLM2).load_model()


def _each_head_edited(reference, ids, value) -> dict[tuple[int, int], torch.Tensor]:  # noqa: F811
    """transformers' logits with each head of LAYERS set to ``value(layer, cols, x)``."""
    found = {}
    for layer in LAYERS:
        for h in range(H):
            cols = slice(h * HD, (h + 1) * HD)

            def edit(x, cols=cols, layer=layer):
                x[..., cols] = value(layer, cols, x)
                return x

            with o_proj_input(reference, layer, edit):
                found[layer, h] = forward_logits(reference, ids)
    return found


def test_random_tokens_shown_twice_without_a_first_token_and_heads_switched_off(ours, reference):  # noqa: F811
    from mha_explorer.core.models.causal import ablation, report, stream

    n = 4
    r = report.repeat_json(report.repeat_ablation(SMOLLM2.key, n, seed=5, ablate=False))
    ids = r["token_ids"]
    assert len(ids) == 2 * n and ids[:n] == ids[n:]  # r, r: this model reads no first token
    first, second = list(range(0, n - 1)), list(range(n, 2 * n - 1))  # each copy's first token left out
    plain = forward_logits(reference, ids)
    assert r["repeat"]["loss_first"] == pytest.approx(mean_nats(plain, ids, first), abs=ATOL)
    assert r["repeat"]["loss_second"] == pytest.approx(mean_nats(plain, ids, second), abs=ATOL)
    rec, merged = stream.record(ours, ids), merged_inputs(reference, ids)
    for mean in (False, True):
        found = ablation.ablate_heads(ours, rec, second, mean=mean, layers=LAYERS)
        off = ((lambda layer, cols, x: merged[layer - 1][..., cols].mean(dim=1, keepdim=True)) if mean
               else (lambda layer, cols, x: 0))
        for (layer, h), logits in _each_head_edited(reference, ids, off).items():
            expected = mean_nats(logits, ids, second)
            assert found[layer - 1, h] == pytest.approx(expected, abs=ATOL), (mean, layer, h)


def test_patching_the_worked_example_recovers_the_fractions_transformers_gives(ours, reference):  # noqa: F811
    from mha_explorer.core.models.causal import patching, report, stream

    clean, corrupt = ours.encode(CLEAN)[0], ours.encode(CORRUPT)[0]
    answer, wrong = report.single_token(ours, ANSWER, "answer"), report.single_token(ours, WRONG, "wrong")

    def diff(logits):
        return float(logits[-1, answer] - logits[-1, wrong])

    ld_clean, ld_corrupt = diff(forward_logits(reference, clean)), diff(forward_logits(reference, corrupt))
    assert ld_clean > 0 > ld_corrupt  # the example does what it is for on this model too
    runs = stream.record(ours, clean), stream.record(ours, corrupt)
    found = patching.patch_heads(ours, *runs, answer, wrong, layers=LAYERS)
    assert found.logit_diff_clean == pytest.approx(ld_clean, abs=ATOL)
    assert found.logit_diff_corrupt == pytest.approx(ld_corrupt, abs=ATOL)
    merged = merged_inputs(reference, clean)
    patched = _each_head_edited(reference, corrupt, lambda layer, cols, x: merged[layer - 1][..., cols])
    for (layer, h), logits in patched.items():
        expected = (diff(logits) - ld_corrupt) / (ld_clean - ld_corrupt)
        assert found.recovered[layer - 1, h] == pytest.approx(expected, abs=ATOL), (layer, h)


def test_the_lens_and_the_attribution_as_transformers_reads_them(capsys, reference):  # noqa: F811
    text = "The capital of France is"
    assert main(["lens", "--weights", SMOLLM2.key, "--text", text, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ids, m = report["token_ids"], reference.model
    parts: dict[str, list[torch.Tensor]] = {"stream": [], "merged": [], "mlp_out": []}
    hooks = [m.embed_tokens.register_forward_hook(lambda _m, _a, out: parts["stream"].append(out[0]))]
    for layer in m.layers:
        hooks += [layer.register_forward_hook(lambda _m, _a, out: parts["stream"].append(out[0])),
                  layer.self_attn.o_proj.register_forward_pre_hook(
                      lambda _m, args: parts["merged"].append(args[0][0])),
                  layer.mlp.register_forward_hook(lambda _m, _a, out: parts["mlp_out"].append(out[0]))]
    try:
        logits = forward_logits(reference, ids)
        with torch.no_grad():
            readout = [F.softmax(reference.lm_head(m.norm(h)), dim=-1) for h in parts["stream"]]  # [T, vocab]
    finally:
        for hook in hooks:
            hook.remove()
    T = len(ids)
    assert [entry["after"] for entry in report["layers"]] == list(range(SMOLLM2.layers + 1))
    for entry, probs in zip(report["layers"], readout, strict=True):
        chosen = probs[torch.arange(T), torch.tensor(entry["top_ids"])]  # the top, or a tie with it
        np.testing.assert_allclose(chosen, probs.max(-1).values, atol=ATOL, err_msg=f"after {entry['after']}")
        np.testing.assert_allclose(entry["top_probs"], probs.max(-1).values, atol=ATOL)
    assert report["layers"][-1]["top_ids"] == logits.argmax(-1).tolist()

    a = report["attribution"]
    token = a["token_id"]
    values = {c["name"]: c["value"] for c in a["components"]}
    assert len(values) == 1 + SMOLLM2.layers * (H + 1)
    assert a["logit"] == pytest.approx(float(logits[-1, token]), abs=ATOL)
    assert abs(sum(values.values()) - a["logit"]) <= a["tolerance"] <= ATOL
    with torch.no_grad():
        last = parts["stream"][-1][-1].double()  # [D]
        per_unit = reference.lm_head.weight[token].double() * (m.norm(last.float()).double() / last)
        embedding = float(parts["stream"][0][-1].double() @ per_unit)
        assert embedding == pytest.approx(values["embedding"], abs=ATOL)
        for layer in LAYERS:
            w_o = m.layers[layer - 1].self_attn.o_proj.weight.double()  # [D, H*hd]
            merged = parts["merged"][layer - 1][-1].double()
            for h in range(H):
                cols = slice(h * HD, (h + 1) * HD)
                part = float((w_o[:, cols] @ merged[cols]) @ per_unit)
                assert part == pytest.approx(values[f"L{layer} h{h}"], abs=ATOL), (layer, h)
            mlp = float(parts["mlp_out"][layer - 1][-1].double() @ per_unit)
            assert mlp == pytest.approx(values[f"L{layer} MLP"], abs=ATOL), layer

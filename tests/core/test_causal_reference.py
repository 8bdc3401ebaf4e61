"""The causal tools' JSON (``heads --repeat --ablate``, ``patch``, ``lens``) against transformers'
Gemma3ForCausalLM built from the same weights, edited and read through hooks of this test's own.

The reference shares no code with the app's tools: a head is switched off or patched by a
pre-hook on transformers' ``o_proj`` that rewrites that head's columns of its input; the lens
reads each decoder layer's output with a forward hook and applies transformers' own final norm
and output layer; the attribution's parts are rebuilt from the hooked inputs and outputs of
``o_proj``, the post-attention norm and the post-MLP norm. Losses, fractions, probabilities and
logits must agree within ``ATOL``.

A few layers' heads are compared by default (the CI's budget); ``MHA_EXPLORER_CAUSAL_FULL=1``
compares all 72.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import numpy as np
import pytest
from causal_hooks import forward_logits, mean_nats, merged_inputs, o_proj_input
from test_gemma3_model import ours, reference  # noqa: F401 - the model and its reference, as fixtures

from mha_explorer.cli import main
from mha_explorer.core.models.causal.example import ANSWER, CLEAN, CORRUPT, WRONG

torch = pytest.importorskip("torch")
F = torch.nn.functional

ATOL = 2e-3
FULL = os.environ.get("MHA_EXPLORER_CAUSAL_FULL") == "1"
LAYERS = range(1, 19) if FULL else (6, 12, 16)  # 6 and 12 hold copying heads, 16 a contrary one
H, HD = 4, 256


def _json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _switched_off(reference, ids, positions, merged=None) -> dict[tuple[int, int], float]:  # noqa: F811
    """transformers' mean loss at ``positions`` with each head of LAYERS zeroed (or set to its mean
    over the text in ``merged``, the plain run's W_O inputs)."""
    found = {}
    for layer in LAYERS:
        for h in range(H):
            cols = slice(h * HD, (h + 1) * HD)

            def off(x, cols=cols, layer=layer):
                x[..., cols] = 0 if merged is None else merged[layer - 1][..., cols].mean(dim=1, keepdim=True)
                return x

            with o_proj_input(reference, layer, off):
                found[layer, h] = mean_nats(forward_logits(reference, ids), ids, positions)
    return found


def test_switching_heads_off_raises_the_loss_as_in_transformers(capsys, reference):  # noqa: F811
    n = 4
    report = _json(capsys, "heads", "--weights", "gemma3-270m", "--repeat", str(n), "--seed", "3", "--ablate",
                   "--json")
    ids = report["token_ids"]
    assert len(ids) == 2 * n + 1 and ids[1:n + 1] == ids[n + 1:]  # <bos>, r, r
    assert report["ablated_to"] == "zero"
    first, second = list(range(1, n)), list(range(n + 1, 2 * n))  # each copy's first token left out
    plain = forward_logits(reference, ids)
    assert report["repeat"]["loss_first"] == pytest.approx(mean_nats(plain, ids, first), abs=ATOL)
    assert report["repeat"]["loss_second"] == pytest.approx(mean_nats(plain, ids, second), abs=ATOL)
    rows = {(r["layer"], r["head"]): r["loss_second"] for r in report["ablation"]}
    assert sorted(rows) == [(layer, h) for layer in range(1, 19) for h in range(H)]
    for head, expected in _switched_off(reference, ids, second).items():
        assert rows[head] == pytest.approx(expected, abs=ATOL), head


def test_mean_ablation_sets_a_head_to_its_mean_output_as_in_transformers(ours, reference):  # noqa: F811
    from mha_explorer.core.models.causal import ablation, stream

    ids, _ = ours.encode("one two three four one two three four")
    positions = list(range(5, len(ids) - 1))
    found = ablation.ablate_heads(ours, stream.record(ours, ids), positions, mean=True, layers=LAYERS)
    expected_losses = _switched_off(reference, ids, positions, merged_inputs(reference, ids))
    for (layer, h), expected in expected_losses.items():
        assert found[layer - 1, h] == pytest.approx(expected, abs=ATOL), (layer, h)


def test_patching_recovers_the_fractions_transformers_gives(capsys, reference):  # noqa: F811
    report = _json(capsys, "patch", "--weights", "gemma3-270m", "--clean", CLEAN, "--corrupt", CORRUPT,
                   "--answer", ANSWER, "--wrong", WRONG, "--json")
    clean, corrupt = report["token_ids_clean"], report["token_ids_corrupt"]
    answer, wrong = report["answer_id"], report["wrong_id"]

    def diff(logits):
        return float(logits[-1, answer] - logits[-1, wrong])

    ld_clean, ld_corrupt = diff(forward_logits(reference, clean)), diff(forward_logits(reference, corrupt))
    assert report["logit_diff_clean"] == pytest.approx(ld_clean, abs=ATOL)
    assert report["logit_diff_corrupt"] == pytest.approx(ld_corrupt, abs=ATOL)
    assert ld_clean > 0 > ld_corrupt  # the example does what it is for
    merged = merged_inputs(reference, clean)
    found = {(r["layer"], r["head"]): r["recovered"] for r in report["heads"]}
    assert len(found) == 72
    for layer in LAYERS:
        for h in range(H):
            cols = slice(h * HD, (h + 1) * HD)

            def patched(x, cols=cols, layer=layer):
                x[..., cols] = merged[layer - 1][..., cols]
                return x

            with o_proj_input(reference, layer, patched):
                expected = (diff(forward_logits(reference, corrupt)) - ld_corrupt) / (ld_clean - ld_corrupt)
            assert found[layer, h] == pytest.approx(expected, abs=ATOL), (layer, h)


@pytest.fixture(scope="module")
def lens_case(reference):  # noqa: F811
    """The lens's JSON for a short text, and transformers' own pass with every part hooked."""
    text = "The capital of France is"
    parts: dict[str, list[torch.Tensor]] = {"stream": [], "merged": [], "attn_proj": [], "attn_out": [],
                                            "mlp_out": []}
    m = reference.model
    hooks = [m.embed_tokens.register_forward_hook(lambda _m, _a, out: parts["stream"].append(out[0]))]
    for layer in m.layers:
        hooks += [
            layer.register_forward_hook(lambda _m, _a, out: parts["stream"].append(out[0])),
            layer.self_attn.o_proj.register_forward_pre_hook(
                lambda _m, args: parts["merged"].append(args[0][0])),
            layer.self_attn.o_proj.register_forward_hook(
                lambda _m, _a, out: parts["attn_proj"].append(out[0])),
            layer.post_attention_layernorm.register_forward_hook(
                lambda _m, _a, out: parts["attn_out"].append(out[0])),
            layer.post_feedforward_layernorm.register_forward_hook(
                lambda _m, _a, out: parts["mlp_out"].append(out[0])),
        ]
    buffer = io.StringIO()  # a module's fixture has no capsys
    with contextlib.redirect_stdout(buffer), pytest.MonkeyPatch.context() as patch:
        from mha_explorer.core.models.causal import readout

        patch.setattr(readout, "ROWS", 50)  # 19 × 6 hidden states read in three blocks
        assert main(["lens", "--weights", "gemma3-270m", "--text", text, "--json"]) == 0
    report = json.loads(buffer.getvalue())
    try:
        with torch.no_grad():
            logits = reference(torch.tensor([report["token_ids"]])).logits[0]
            readout = [F.softmax(reference.lm_head(m.norm(h)), dim=-1) for h in parts["stream"]]  # [T, vocab]
    finally:
        for hook in hooks:
            hook.remove()
    return report, parts, readout, logits


def test_the_lens_reads_every_layer_as_transformers_does(lens_case):
    report, _, readout, logits = lens_case
    assert [entry["after"] for entry in report["layers"]] == list(range(19))
    T = len(report["token_ids"])
    for entry, probs in zip(report["layers"], readout, strict=True):
        assert len(entry["top_ids"]) == len(entry["top_probs"]) == T
        ref_top = probs.max(-1)
        # the same token on top, or one whose probability ties the reference's top within ATOL
        chosen = probs[torch.arange(T), torch.tensor(entry["top_ids"])]
        np.testing.assert_allclose(chosen, ref_top.values, atol=ATOL, err_msg=f"after {entry['after']}")
        np.testing.assert_allclose(entry["top_probs"], ref_top.values, atol=ATOL)
        assert sum(a == b for a, b in zip(entry["top_ids"], ref_top.indices.tolist(), strict=True)) >= T - 1
    assert report["layers"][-1]["top_ids"] == logits.argmax(-1).tolist()  # the last row: the model's output


def test_the_attribution_sums_to_the_logit_and_each_part_is_transformers(lens_case, reference):  # noqa: F811
    report, parts, _, logits = lens_case
    a = report["attribution"]
    T = len(report["token_ids"])
    token = a["token_id"]
    assert a["position"] == T - 1 and token == report["layers"][-1]["top_ids"][-1]
    assert a["logit"] == pytest.approx(float(logits[-1, token]), abs=ATOL)
    values = {c["name"]: c["value"] for c in a["components"]}
    assert len(values) == 1 + 18 * (H + 1)
    assert abs(sum(values.values()) - a["logit"]) <= a["tolerance"] <= ATOL
    assert a["sum"] == pytest.approx(sum(values.values()), abs=1e-5)
    with torch.no_grad():
        last = parts["stream"][-1][-1].double()  # [D] the last layer's output at the last position
        final_scale = reference.model.norm(last.float()).double() / last  # what the final norm multiplied by
        per_unit = reference.lm_head.weight[token].double() * final_scale
        embedding = float(parts["stream"][0][-1].double() @ per_unit)
        assert embedding == pytest.approx(values["embedding"], abs=ATOL)
        for layer in range(1, 19):
            w_o = reference.model.layers[layer - 1].self_attn.o_proj.weight.double()  # [D, H*hd]
            proj, out = parts["attn_proj"][layer - 1][-1].double(), parts["attn_out"][layer - 1][-1].double()
            merged = parts["merged"][layer - 1][-1].double()
            for h in range(H):
                cols = slice(h * HD, (h + 1) * HD)
                head = (w_o[:, cols] @ merged[cols]) * (out / proj)  # its part of the normed attention output
                assert float(head @ per_unit) == pytest.approx(values[f"L{layer} h{h}"], abs=ATOL), (layer, h)
            mlp = float(parts["mlp_out"][layer - 1][-1].double() @ per_unit)
            assert mlp == pytest.approx(values[f"L{layer} MLP"], abs=ATOL), layer

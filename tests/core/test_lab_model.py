"""The lab's attention is the engine's attention: it matches torch's own
nn.MultiheadAttention, and removing a head is exactly leaving its term out."""

import os

import pytest
import torch
from torch import nn

from mha_explorer.core.lab.model import LabAttention, LabModel, LabModelSpec, attention, causal_visible
from mha_explorer.core.lab.train import TrainSettings, evaluate, make_batch, train

D, H, T, B = 16, 4, 6, 3


def _layer(seed=0) -> LabAttention:
    torch.manual_seed(seed)
    layer = LabAttention(D, H)
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_(0, 0.4)
    return layer


def _torch_mha(layer: LabAttention) -> nn.MultiheadAttention:
    w = layer.weights()
    mha = nn.MultiheadAttention(D, H, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w["W_Q"], w["W_K"], w["W_V"]]))
        mha.in_proj_bias.copy_(torch.cat([w["b_Q"], w["b_K"], w["b_V"]]))
        mha.out_proj.weight.copy_(w["W_O"])
        mha.out_proj.bias.copy_(w["b_O"])
    return mha


@pytest.mark.parametrize("causal", [False, True])
def test_lab_attention_equals_torch_multihead_attention(causal):
    layer = _layer()
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(1))
    visible = causal_visible(T) if causal else None
    y, weights = layer(x, visible)
    ref_y, ref_w = _torch_mha(layer)(x, x, x, attn_mask=None if visible is None else ~visible,
                                     need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(y, ref_y, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_w, atol=1e-5, rtol=1e-5)


def test_removing_a_head_equals_leaving_its_term_out_of_the_output():
    layer = _layer(2)
    w = {k: v.detach() for k, v in layer.weights().items()}
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(3))
    dk = D // H
    # written out per head: Y = b_O + sum_h softmax(q_h k_h^T / sqrt(dk)) v_h W_O[:, h]^T
    q, k, v = (x @ w[f"W_{n}"].T + w[f"b_{n}"] for n in "QKV")
    terms = []
    for h in range(H):
        cols = slice(h * dk, (h + 1) * dk)
        p = torch.softmax(q[..., cols] @ k[..., cols].transpose(1, 2) / dk**0.5, dim=-1)
        terms.append((p @ v[..., cols]) @ w["W_O"][:, cols].T)
    for gone in range(H):
        keep = torch.ones(H)
        keep[gone] = 0
        y, _ = attention(x, w, H, head_keep=keep)
        expected = w["b_O"] + sum(t for h, t in enumerate(terms) if h != gone)
        torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)


def test_model_ablation_changes_only_through_the_removed_head():
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=16, heads=4)
    torch.manual_seed(0)
    model = LabModel(spec).eval()
    batch = make_batch(spec, 8, torch.Generator().manual_seed(0), "cpu")
    keep = torch.ones(1, 4)
    keep[0, 2] = 0
    logits, _ = model(batch[0], keep)
    # recompute by hand: embedding + positions, attention without head 2, residual, readout
    x = model.embed(batch[0]) + model.pos
    w = {k: v.detach() for k, v in model.attn[0].weights().items()}
    y, _ = attention(x, w, 4, model.visible, keep[0])
    torch.testing.assert_close(logits, model.readout(x + y), atol=1e-5, rtol=1e-5)


def _tiny(seed, **kw):
    spec = LabModelSpec(task="reverse", vocab=6, n=3, d_model=16, heads=2, **kw)
    return train(spec, TrainSettings(steps=12, batch=8, eval_every=4, eval_size=16, seed=seed, device="cpu"))


def test_the_same_seed_gives_the_same_numbers():
    a, b = _tiny(5), _tiny(5)
    assert a.curve == b.curve and a.entropy == b.entropy
    for (name, p), (_n, q) in zip(a.model.state_dict().items(),
                                  b.model.state_dict().items(), strict=True):
        assert torch.equal(p, q), name


def test_another_seed_gives_other_numbers():
    assert _tiny(5).curve != _tiny(6).curve


def test_two_layers_mlp_and_sinusoidal_positions_train_too():
    run = _tiny(1, layers=2, mlp=True, positions="sinusoidal")
    assert len(run.entropy[-1][1]) == 4  # two layers of two heads
    batch = make_batch(run.spec, 4, torch.Generator().manual_seed(0), "cpu")
    acc, bits, maps = evaluate(run.model, batch)
    assert 0 <= acc <= 1 and len(maps) == 2 and maps[0].shape == (4, 2, 6, 6)
    # causal: nothing after the query is looked at, each row sums to one
    assert torch.all(maps[1].triu(1) == 0)
    torch.testing.assert_close(maps[1].sum(-1), torch.ones(4, 2, 6))


def test_entropy_is_log2_of_the_keys_for_uniform_attention():
    from mha_explorer.core.lab.train import entropy_bits

    T_ = 4
    uniform = torch.tril(torch.ones(T_, T_)) / torch.arange(1, T_ + 1)[:, None]  # row i: 1/(i+1)
    maps = [uniform.expand(1, 2, T_, T_)]
    scored = torch.tensor([[False, False, True, True]])
    expected = (torch.log2(torch.tensor(3.0)) + 2.0) / 2  # rows 2 and 3 see 3 and 4 keys
    assert entropy_bits(maps, scored) == pytest.approx([float(expected)] * 2, abs=1e-6)


def test_bad_model_shapes_are_refused():
    with pytest.raises(ValueError, match="do not divide"):
        LabModelSpec(d_model=10, heads=4)
    with pytest.raises(ValueError, match="unknown task"):
        LabModelSpec(task="nope")
    with pytest.raises(ValueError, match="steps"):
        TrainSettings(steps=0)


def test_pause_holds_training_and_cancel_ends_it_while_paused():
    from mha_explorer.core.errors import Cancelled

    spec = LabModelSpec(task="copy", vocab=4, n=2, d_model=8, heads=2)
    polls, events = [], []

    def cancel() -> bool:
        polls.append(1)
        return len(polls) > 3  # asked before the first step and while paused

    with pytest.raises(Cancelled):
        train(spec, TrainSettings(steps=5, batch=4, eval_every=1, eval_size=4),
              progress=events.append, pause=lambda: True, cancel=cancel)
    assert events == []  # paused from the start: not one step was trained


def test_progress_reports_every_evaluation_with_maps_when_asked():
    spec = LabModelSpec(task="copy", vocab=4, n=2, d_model=8, heads=2)
    events = []
    run = train(spec, TrainSettings(steps=6, batch=4, eval_every=2, eval_size=4),
                progress=events.append, maps_every=2)
    assert [e.step for e in events] == [2, 4, 6] == [p[0] for p in run.curve]
    assert events[0].maps is None and events[1].maps.shape == (1, 2, 4, 4) and events[2].maps is not None
    assert [e.accuracy for e in events] == [p[2] for p in run.curve]


@pytest.fixture
def caller_threads():
    """Torch's thread count as this process had it, put back whatever a test does."""
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


def test_training_gives_the_caller_its_torch_threads_back(caller_threads):
    """Torch's thread count is the whole process's: training takes the cores left free,
    never more than the caller had, and hands the caller's count back, cancelled or not."""
    from mha_explorer.core.errors import Cancelled

    spec = LabModelSpec(task="copy", vocab=4, n=2, d_model=8, heads=2)
    settings = TrainSettings(steps=4, batch=4, eval_every=2, eval_size=4, device="cpu")
    torch.set_num_threads(1)  # a caller that keeps to one core
    during = []
    train(spec, settings, progress=lambda _event: during.append(torch.get_num_threads()))
    assert during == [1, 1] and torch.get_num_threads() == 1
    more = (os.cpu_count() or 1) + 3  # more than the machine has: training never picks this
    torch.set_num_threads(more)
    train(spec, settings)
    assert torch.get_num_threads() == more
    with pytest.raises(Cancelled):
        train(spec, settings, cancel=lambda: True)
    assert torch.get_num_threads() == more

"""Ablation and pruning bookkeeping, saving and loading, and the weight source."""

import json
import os

import pytest
import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.lab.analysis import Ablation, Pruning, ablate, head_maps, prune, pruning_sets
from mha_explorer.core.lab.model import LabModelSpec, attention
from mha_explorer.core.lab.source import LabWeights, config_changes
from mha_explorer.core.lab.store import RunFileError, load_run, save_run
from mha_explorer.core.lab.train import TrainSettings, eval_batch, train


@pytest.fixture(scope="module")
def run():
    spec = LabModelSpec(task="reverse", vocab=5, n=3, d_model=16, heads=4)
    return train(spec, TrainSettings(steps=40, batch=16, eval_every=10, eval_size=32, seed=3, device="cpu"))


def _accuracy_by_hand(run, removed: set[int], batch=None) -> float:
    """Held-out accuracy recomputed from the weights, with the removed heads' terms left out."""
    tokens, targets, scored = eval_batch(run.spec, run.settings) if batch is None else batch
    m = run.model
    with torch.no_grad():
        x = m.embed(tokens) + m.pos
        keep = torch.tensor([0.0 if i in removed else 1.0 for i in range(run.spec.heads)])
        w = {k: v.detach() for k, v in m.attn[0].weights().items()}
        y, _ = attention(x, w, run.spec.heads, m.visible, keep)
        pred = m.readout(x + y).argmax(-1)
    return float(((pred == targets) & scored).sum()) / float(scored.sum())


def test_ablation_drop_is_the_accuracy_lost_with_that_head_zeroed(run):
    result = ablate(run)
    base = _accuracy_by_hand(run, set())
    assert result.base_accuracy == pytest.approx(base)
    for head in range(4):
        assert result.drops[head] == pytest.approx(base - _accuracy_by_hand(run, {head}))


def test_ranking_puts_the_largest_drop_first_and_breaks_ties_by_index():
    assert Ablation(0.9, [0.1, 0.3, 0.0, 0.3]).ranking == [1, 3, 0, 2]


def test_pruning_chooses_on_one_held_out_set_and_reports_on_another(run):
    result = prune(run)
    select, report = pruning_sets(run)
    assert sorted(result.order) == [0, 1, 2, 3]
    assert len(result.accuracy) == len(result.selection_accuracy) == 5
    for k in range(5):
        gone = set(result.order[:k])
        # what is reported is measured on the report set, not on the set that chose
        assert result.accuracy[k] == pytest.approx(_accuracy_by_hand(run, gone, report))
        assert result.selection_accuracy[k] == pytest.approx(_accuracy_by_hand(run, gone, select))
        if k:  # no other remaining head would have left more selection accuracy at this step
            for other in set(range(4)) - set(result.order[:k - 1]):
                kept = _accuracy_by_hand(run, set(result.order[:k - 1]) | {other}, select)
                assert kept <= result.selection_accuracy[k] + 1e-9


def test_the_report_set_is_fresh_data(run):
    """Neither the training stream's first batches nor the curves' evaluation batch
    nor the selection set: a different draw of sequences."""
    select, report = pruning_sets(run)
    evaluation = eval_batch(run.spec, run.settings)
    for other in (select, evaluation):
        differs = (report[0] != other[0]).any(-1)  # [B]: sequence i is another sequence
        assert differs.float().mean() > 0.9


def test_removable_counts_heads_on_the_report_set_not_the_selection_set():
    p = Pruning(order=[0, 1], accuracy=[0.9, 0.7, 0.1], selection_accuracy=[0.9, 0.9, 0.1])
    assert p.removable == 0  # chosen as harmless on the selection set, but it cost 20 points


def test_removable_counts_heads_until_the_first_drop_beyond_one_point():
    p = Pruning(order=[2, 0, 3, 1], accuracy=[0.98, 0.975, 0.9705, 0.96, 0.2])
    assert p.removable == 2  # 0.9705 is within 0.01 of 0.98; 0.96 is not
    assert p.survivors() == [1, 3]
    # a later recovery does not count: the answer stops at the first drop
    assert Pruning([0, 1, 2], [1.0, 0.5, 1.0, 0.1]).removable == 0


def test_survivor_maps_are_the_kept_heads_of_sample_zero(run):
    maps = head_maps(run, [1, 3])
    assert maps.shape == (2, 6, 6)
    all_maps = head_maps(run, [0, 1, 2, 3])
    # the maps of one layer do not depend on which heads feed its output
    assert maps == pytest.approx(all_maps[[1, 3]])


def test_save_and_load_give_the_same_model_and_numbers(run, tmp_path):
    extra = {"pruning": {"order": [1, 0, 3, 2], "accuracy": [1.0, 0.5, 0.4, 0.3, 0.1]}}
    save_run(run, tmp_path / "r", extra)
    back, back_extra = load_run(tmp_path / "r")
    assert back.spec == run.spec and back.settings == run.settings
    assert back.curve == [tuple(p) for p in run.curve] and back.entropy == run.entropy
    assert back_extra == extra
    for (name, a), (_n, b) in zip(run.model.state_dict().items(),
                                  back.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert ablate(back).drops == ablate(run).drops
    assert not [p for p in os.listdir(tmp_path / "r") if p.endswith(".tmp")]
    assert json.loads((tmp_path / "r" / "run.json").read_text())["spec"]["heads"] == 4


def test_links_and_damaged_files_are_refused(run, tmp_path):
    real = tmp_path / "real"
    save_run(run, real)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(RunFileError, match="symbolic link"):
        save_run(run, tmp_path / "link")
    with pytest.raises(RunFileError, match="symbolic link"):
        load_run(tmp_path / "link")
    (real / "model.safetensors").write_bytes(b"not tensors")
    with pytest.raises(RunFileError, match="model.safetensors"):
        load_run(real)
    with pytest.raises(RunFileError, match="missing"):
        load_run(tmp_path / "nothing")


def test_weight_source_gives_the_trained_layer_and_its_real_input(run, tmp_path):
    save_run(run, tmp_path / "r")
    cfg = MHAConfig(weights="lab", weights_path=str(tmp_path / "r"), **config_changes(run))
    src = LabWeights(cfg)
    w = src.weights(cfg, "cpu", torch.float32)
    assert set(w) == {"W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"}
    assert torch.equal(w["W_Q"], run.model.attn[0].q.weight.detach())
    x, xkv = src.inputs(cfg, range(1, 3), "cpu", torch.float32)
    tokens = eval_batch(run.spec, run.settings)[0]
    expected = run.model.embed(tokens[1:3]) + run.model.pos
    torch.testing.assert_close(x, expected.detach())
    assert xkv is x
    labels_q, labels_kv = src.tokens(cfg)
    assert len(labels_q) == 6 and labels_q[3:] == ("_", "_", "_")  # reverse: answer slots are blank
    assert "reverse" in src.notes(cfg)[0]


def test_weight_source_says_which_shapes_and_layers_fit(run, tmp_path):
    save_run(run, tmp_path / "r")
    good = config_changes(run)
    with pytest.raises(ConfigError) as err:
        LabWeights(MHAConfig(weights="lab", weights_path=str(tmp_path / "r"), layer=2, **good)).weights(
            MHAConfig(weights="lab", weights_path=str(tmp_path / "r"), layer=2, **good), "cpu", torch.float32)
    assert err.value.field == "layer"
    wrong = MHAConfig(weights="lab", weights_path=str(tmp_path / "r"), **{**good, "n_heads": 2})
    with pytest.raises(ConfigError) as err:
        LabWeights(wrong).inputs(wrong, range(1), "cpu", torch.float32)
    assert err.value.field == "weights_path" and err.value.suggestions[0]["n_heads"] == 4
    with pytest.raises(ConfigError):
        LabWeights(MHAConfig(weights="lab", weights_path=str(tmp_path / "none")))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_the_gpu_a_run_trains_ablates_prunes_finds_its_circuit_and_round_trips(tmp_path):
    """The Lab trains on the GPU when there is one ("auto"): every step after training must
    keep its tensors there, and a saved run loads back on the CPU with the same weights."""
    from mha_explorer.core.lab.analysis import find_circuit

    spec = LabModelSpec(task="induction", vocab=8, n=6, d_model=16, heads=2, layers=2)
    run = train(spec, TrainSettings(steps=20, batch=8, eval_every=10, eval_size=16, seed=1))
    assert run.device == "cuda"
    assert len(ablate(run).drops) == 4
    assert len(prune(run).order) == 4
    find_circuit(run)
    head_maps(run, [0, 1])
    save_run(run, tmp_path / "r")
    back, _extra = load_run(tmp_path / "r")
    saved, loaded = run.model.state_dict(), back.model.state_dict()
    for (name, a), (_n, b) in zip(saved.items(), loaded.items(), strict=True):
        assert torch.equal(a.cpu(), b.cpu()), name

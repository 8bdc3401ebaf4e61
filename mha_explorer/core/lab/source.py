"""A saved lab run as the engine's weight source (``weights = "lab"``).

``cfg.weights_path`` names the run folder and ``cfg.layer`` (1-based) the
attention layer. The layer's weights come as the engine expects them (nn.Linear
layout, with bias); its input is what that layer really saw on the run's
evaluation batch: token embedding + positions (+ the earlier layers), so the
stage view replays the trained layer on real data.
"""

from __future__ import annotations

import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.lab.store import RunFileError, load_run
from mha_explorer.core.lab.tasks import symbols
from mha_explorer.core.lab.train import LabRun, eval_batch
from mha_explorer.core.variants.registry import FAMILIES


def config_changes(run: LabRun) -> dict:
    """The config fields that make the stage view match a lab run's layer."""
    s = run.spec
    return {"d_model": s.d_model, "n_heads": s.heads, "n_kv_heads": None, "seq": s.seq, "kv_seq": None,
            "causal": True, "causal_alignment": "top-left", "bias": True,
            # plain multi-head attention: every family's own fields back to their defaults
            **{name: value for family in FAMILIES for name, value in family.leave().items()},
            "window": None, "stride": None, "global_tokens": 0,
            "batch": min(run.settings.eval_size, 4)}


class LabWeights:
    """WeightSource for a lab run; the loaded run is cached on the instance."""

    def __init__(self, cfg: MHAConfig):
        if not cfg.weights_path:
            raise ConfigError("weights_path", "choose a saved lab run (a folder) for the lab weights")
        self.path = cfg.weights_path
        try:
            self.run, _extra = load_run(self.path)
        except RunFileError as exc:
            raise ConfigError("weights_path", str(exc)) from None
        self._inputs: list[torch.Tensor] | None = None
        self._tokens: torch.Tensor | None = None

    def _check(self, cfg: MHAConfig) -> int:
        """The 0-based layer, after checking that the config has the run's shapes."""
        spec = self.run.spec
        if not 1 <= cfg.layer <= spec.layers:
            raise ConfigError("layer", f"this lab run has {spec.layers} attention layer"
                              f"{'s' if spec.layers > 1 else ''}; choose layer 1–{spec.layers}",
                              [{"layer": 1}])
        wanted = config_changes(self.run)
        keys = ("d_model", "n_heads", "seq", "bias")
        if any(getattr(cfg, k) != wanted[k] for k in keys) or cfg.Hkv != spec.heads or cfg.is_cross:
            raise ConfigError("weights_path", f"this lab run has d_model {spec.d_model}, {spec.heads} heads "
                              f"and sequences of {spec.seq} tokens with bias; the layer must match",
                              [wanted])
        if cfg.batch > self.run.settings.eval_size:
            raise ConfigError("batch", f"the lab run's evaluation batch has {self.run.settings.eval_size} "
                              "sequences", [{"batch": self.run.settings.eval_size}])
        return cfg.layer - 1

    def _evaluation_inputs(self) -> list[torch.Tensor]:
        if self._inputs is None:
            tokens, _targets, _scored = eval_batch(self.run.spec, self.run.settings)
            with torch.no_grad():
                self._inputs = [x.detach() for x in self.run.model.layer_inputs(tokens)]
            self._tokens = tokens
        return self._inputs

    def tokens(self, cfg: MHAConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Labels of evaluation sample 0: the task's symbols (``_`` for an answer slot)."""
        self._check(cfg)
        self._evaluation_inputs()
        names = symbols(self.run.spec.vocab)
        labels = tuple(names[int(t)] for t in self._tokens[0])
        return labels, labels

    def weights(self, cfg: MHAConfig, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        layer = self.run.model.attn[self._check(cfg)]
        return {k: v.detach().to(device, dtype) for k, v in layer.weights().items()}

    def inputs(self, cfg: MHAConfig, batch: range, device: str, dtype: torch.dtype
               ) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._evaluation_inputs()[self._check(cfg)][batch.start:batch.stop]  # [nb, T, D]
        x = x.to(device, dtype)
        return x, x

    def notes(self, cfg: MHAConfig) -> tuple[str, ...]:
        s = self.run.spec
        acc = self.run.final_accuracy
        return (f"lab model trained on '{s.task}', layer {cfg.layer} of {s.layers} ({s.heads} heads, "
                f"held-out accuracy {acc:.1%}); input = embedding + {s.positions} positions"
                + (" + earlier layers" if cfg.layer > 1 else ""),
                "trained with a causal mask: turn causal on to see the maps it learned")

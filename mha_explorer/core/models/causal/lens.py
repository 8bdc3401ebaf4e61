"""The logit lens and direct logit attribution.

The lens reads the residual stream after the embedding and after every layer as if it were the
last: through the final norm and the unembedding, the likeliest token and its probability at
every position. Where the answer appears, and how sure it is, tells at which depth it forms.

Attribution splits one logit at the last position among the parts the stream is the sum of:
the embedding, every head (its slice of W_O's input through its columns of W_O and the
post-attention norm) and every MLP. The norms are not linear, so each is taken as the multiplier
it was in this run (``post_attention_scale``, ``final_norm_scale``); with those fixed the logit
is a sum, and the parts add up to it within ``ATTRIBUTION_TOLERANCE``.
"""

from __future__ import annotations

import numpy as np
import torch

from mha_explorer.core.models.causal import readout, stream
from mha_explorer.core.models.causal.results import Attribution, Lens
from mha_explorer.core.models.causal.stream import Recorded, Work


def lens_cost(model, tokens: int) -> float:
    return readout.read_cost(model, (model.description.layers + 1) * tokens)


def logit_lens(model, rec: Recorded, work: Work | None = None) -> Lens:
    depth, T = len(rec.stream), rec.final.shape[1]
    hidden = torch.cat(rec.stream).reshape(depth * T, -1)  # [(layers + 1) * T, D]
    found = readout.read(model, hidden, work)
    return Lens(found.top_id.view(depth, T).numpy(), found.top_prob.view(depth, T).numpy())


def attribute(model, rec: Recorded, token_id: int) -> Attribution:
    """Token ``token_id``'s logit at the last position, split into the stream's parts."""
    d = model.description
    with torch.inference_mode():
        last = rec.final[0, -1]  # [D]
        # [D]: the logit one unit of the stream in each direction adds, with the final norm fixed
        per_unit = (model.unembedding()[token_id] * model.final_norm_scale(last)).double()
        names, heads, values = ["embedding"], [None], [rec.stream[0][0, -1].double() @ per_unit]
        for layer in range(1, d.layers + 1):
            w_o = model.attention_weights(layer)["W_O"].double()  # [D, H*hd]
            merged = rec.merged[layer - 1][0, -1].double()  # [H*hd]
            scale = rec.attn_scale_last[layer - 1].double()  # [D]
            for h in range(d.heads):
                cols = stream.head_slice(model, h)
                names.append(f"L{layer} h{h}")
                heads.append((layer, h))
                values.append((w_o[:, cols] @ merged[cols]) * scale @ per_unit)
            names.append(f"L{layer} MLP")
            heads.append(None)
            values.append(rec.mlp_last[layer - 1].double() @ per_unit)
        logit = float(readout.logits_of(model, last[None], torch.tensor([token_id]))[0, 0])
    return Attribution(len(rec.ids) - 1, int(token_id), logit, tuple(names), tuple(heads),
                       np.array([float(v) for v in values]))

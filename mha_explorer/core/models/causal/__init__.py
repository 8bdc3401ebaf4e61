"""What a decoder's heads *do*: switch one off, patch it from another run, and read the residual
stream layer by layer (the logit lens) with each part's direct share of a logit.

Written once for every decoder in the catalogue. A model is reached only through what every
decoder offers: ``description``; ``embed(ids)``; ``layer(layer, x)`` (``.merged``,
``.attn_proj``, ``.mlp_out``, ``.hidden_out``); ``finish_layer(layer, x, merged)`` (the rest of
a layer from given merged heads: how a head is zeroed or patched, in its slice of W_O's
input); ``attention_weights(layer)["W_O"]``; ``post_attention_scale`` and ``final_norm_scale``
(each norm as the multiplier it was in the run); ``unembedding()``; ``encode``; the model's
``report.induction_report`` for the repeated random tokens. Layers are 1-based, heads 0-based.

- ``stream``: one text's run with what the tools edit kept, and a run taken up again from a
  layer with edited heads (a layer's heads side by side as a batch);
- ``readout``: the final norm and the unembedding, a slice of the vocabulary at a time;
- ``ablation``, ``patching``, ``lens``: the three tools (torch);
- ``report``: the checked entry points the command line and the window call (no torch until
  the input is good), and their JSON.
"""

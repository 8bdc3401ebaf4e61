"""Gemma 3 270M, a trained decoder: its description (``description``), its files and the
converted copy in the cache (``files``, ``convert``), its tokenizer, its forward pass
(``model``), generation with a KV cache (``generate``), the induction demonstration and
the numbers the command line prints (``report``). Only model, weights_file, generate and
induction_demo import torch.
"""

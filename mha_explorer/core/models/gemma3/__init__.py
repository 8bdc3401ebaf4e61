"""Gemma 3 270M, a trained decoder: its description (``description``), where its GGUF file is
and what its converted copy must hash to (``files``), how the file converts (``convert``: the
metadata it must hold, the tensors' names) and its tokenizer, rebuilt from the vocabulary
(``vocab``). The rest is the shared decoder core's (``core/models/decoder``); the other
modules here bind it to Gemma under the names older callers use.
"""

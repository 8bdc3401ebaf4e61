"""SmolLM2-135M-Instruct, a trained decoder with grouped-query attention (9 query heads on 3
key/value heads): its description (``description``), where its GGUF file is and what its
converted copy must hash to (``files``), and how the file converts (``convert``). Everything
else is the shared decoder core's (``core/models/decoder``).
"""

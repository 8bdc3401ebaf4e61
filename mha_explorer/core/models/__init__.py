"""Trained models, one home each: a torch-free description per model (``description``)
and, in the model's own subpackage, its files, tokenizer and forward pass.
"""

"""Views of a trained model's heads: every layer at a glance, pattern scores, ablation.

They receive numpy arrays and plain dicts (from ``core/trained/report.py`` and
``core/trained/ablation.py`` on the worker thread) and never call torch.
"""

"""A trained model's real heads: all-MiniLM-L6-v2, read offline from an installed package.

Torch-free entry points: ``model_info`` (shape and pins), ``files`` (finding and
checking the package, ``is_available``), ``tokenizer`` (word pieces) and
``patterns`` (scores of a map). Torch lives in ``model``, ``ablation``,
``source`` and ``report``; importing this package imports none of them.
"""

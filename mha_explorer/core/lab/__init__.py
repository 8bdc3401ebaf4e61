"""The head lab: small attention models trained on generated tasks, then ablated and pruned.

``tasks`` is torch-free (the window shows samples from it); the rest imports torch.
"""

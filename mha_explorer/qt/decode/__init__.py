"""Decode and tiles views: generation with a KV cache, and FlashAttention's tiles."""

"""The three states of a FlashAttention tile, apart from the tile arithmetic (core.plan.tiles),
so that a view can name them without loading numpy at start-up."""

SKIPPED, PARTIAL, FULL = 0, 1, 2  # tile states, as stored in ``tile_states``
TILE_STATE_NAMES = ("skipped", "partial", "full")

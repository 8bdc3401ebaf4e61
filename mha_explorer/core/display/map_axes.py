"""What the rows and the columns of a set of heatmaps are, and the words that say so.

A map's columns follow the stage's kind of maps (catalog.Maps) and its rows follow the
tensor shown; MapAxes carries both, with the sizes, and writes the two short lines the
heads panel draws beside its grid ('rows: queries ↓', 'columns: keys →'). Plain Python,
no Qt: the panel only places the words.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.stages.catalog import Maps

# What a map's rows and columns are, by the kind each builder of head_maps gives them: the stage's
# kind of maps (catalog.Maps) decides the columns, the tensor shown decides the rows.
ROW_WORDS = {"query": "queries", "key": "keys", "token": "tokens"}
COLUMN_WORDS = {
    "key": "keys",  # Maps.ATTENTION: one column per key
    "feature": "features",  # Maps.TOKENS: each row is a token's whole vector
    "head_dim": "dims of one head",  # Maps.SPLIT, Maps.CONTEXT: a head's slice of the vector
    "width": "each matrix's columns",  # Maps.STORED with matrices of several kinds
}
# the columns each kind of stage draws, where the stage (not the tensor) decides them
STAGE_COLUMNS = {Maps.ATTENTION: "key", Maps.CONTEXT: "head_dim", Maps.SPLIT: "head_dim",
                 Maps.TOKENS: "feature"}


@dataclass(frozen=True)
class MapAxes:
    """What the rows and the columns of a set of maps are, and the words that say it."""

    rows: str  # a key of ROW_WORDS
    columns: str  # a key of COLUMN_WORDS
    size: str = ""  # the columns' dim: "D = 512"
    picked: int = 0  # rows picked out of the sequence (0: every row, or a window of them)
    total: int = 0  # the sequence's rows, when picked

    @property
    def row_words(self) -> str:
        words = ROW_WORDS[self.rows]
        if self.picked and self.total > self.picked:
            return f"{self.picked:,} of {self.total:,} {words}, spread evenly, each exact"
        return words

    @property
    def column_words(self) -> str:
        words = COLUMN_WORDS[self.columns]
        return f"{words} ({self.size})" if self.size else words

    def lines(self) -> tuple[str, str]:
        """('rows: queries ↓', 'columns: keys →'), as the maps' axes are drawn:
        row 0 at the top, column 0 at the left."""
        return f"rows: {self.row_words} ↓", f"columns: {self.column_words} →"

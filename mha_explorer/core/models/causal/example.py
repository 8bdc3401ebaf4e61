"""The worked example of activation patching (no imports): two prompts of the same length in
which a name is swapped, and the two names as one-token answers. The clean prompt makes a
decoder answer " Mary"; the corrupted one, with the second name changed, makes it lean to " John"."""

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"
ANSWER, WRONG = " Mary", " John"

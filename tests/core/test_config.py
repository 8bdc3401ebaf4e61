"""Config validation: each mistake names its field, says what is wrong, and
offers fixes that really are fixes."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mha_explorer.core.config import CAPS, ConfigError, MHAConfig


def error_for(**kw) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        MHAConfig(**kw)
    return info.value


SIZE_FIELDS = ["d_model", "n_heads", "n_kv_heads", "batch", "seq", "kv_seq"]
BAD_SIZES = [
    (field, value)
    for field in SIZE_FIELDS
    for value in (0, -3, 2.0, "8", True, None)
    if not (value is None and field in ("n_kv_heads", "kv_seq"))  # None: follow heads / seq
]


@pytest.mark.parametrize("field,value", BAD_SIZES)
def test_bad_sizes_name_their_field(field, value):
    err = error_for(**{field: value})
    assert err.field == field
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("field", ["d_model", "n_heads", "n_kv_heads", "batch", "seq", "kv_seq", "seed"])
def test_above_the_cap(field):
    err = error_for(**{field: CAPS[field] + 1})
    assert err.field == field
    assert f"{CAPS[field]:,}" in err.message


def test_negative_seed_is_refused_but_zero_is_fine():
    assert error_for(seed=-1).field == "seed"
    assert MHAConfig(seed=0).seed == 0


@pytest.mark.parametrize("field,value", [
    ("dtype", "float64"), ("dtype", "fp16"), ("device", "tpu"),
    ("causal_alignment", "centre"), ("causal", "yes"), ("bias", 1),
])
def test_bad_choices_name_their_field(field, value):
    err = error_for(**{field: value})
    assert err.field == field
    assert repr(value) in err.message


def test_heads_not_dividing_d_model_suggests_the_nearest_heads():
    err = error_for(d_model=10, n_heads=3)
    assert err.field == "n_heads"
    assert err.message.startswith("d_model 10 is not divisible by 3 heads; try 2 or 5 heads")
    assert {"n_heads": 2} in err.suggestions and {"n_heads": 5} in err.suggestions


def test_a_heads_fix_also_fixes_the_kv_heads_it_would_break():
    # 4 heads cannot be shared by the 5 key/value heads that were fine with 5 heads
    err = error_for(d_model=12, n_heads=5, n_kv_heads=5)
    assert err.message.startswith("d_model 12 is not divisible by 5 heads; try 4 or 6 heads")
    assert {"n_heads": 4, "n_kv_heads": 4} in err.suggestions
    assert {"d_model": 10} in err.suggestions  # 5 heads of 2: key/value heads stay valid


def test_more_heads_than_d_model():
    err = error_for(d_model=4, n_heads=6)
    assert err.field == "n_heads" and "more than d_model 4" in err.message


def test_kv_heads_must_divide_heads():
    err = error_for(n_heads=8, n_kv_heads=3)
    assert err.field == "n_kv_heads"
    assert "8 heads cannot be shared evenly by 3" in err.message
    assert {"n_kv_heads": 2} in err.suggestions and {"n_kv_heads": 4} in err.suggestions


def test_more_kv_heads_than_heads():
    err = error_for(n_heads=8, n_kv_heads=16)
    assert err.field == "n_kv_heads" and "more than the 8 query heads" in err.message


def test_tokens_must_match_the_sequence_length():
    err = error_for(seq=4, tokens=("a", "b", "c"))
    assert err.field == "tokens"
    assert "3 words" in err.message and "4" in err.message
    assert err.suggestions == [{"seq": 3}]
    assert error_for(seq=2, tokens=("a", "")).field == "tokens"


def test_valid_variants():
    assert MHAConfig(n_heads=8, n_kv_heads=8).variant == "MHA"
    assert MHAConfig(n_heads=8, n_kv_heads=2).variant == "GQA"
    assert MHAConfig(n_heads=8, n_kv_heads=1).variant == "MQA"
    assert MHAConfig(n_heads=8).Hkv == 8


def test_from_dict_round_trip_and_unknown_keys():
    cfg = MHAConfig(seq=3, tokens=("a", "b", "c"), n_kv_heads=2)
    assert MHAConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError) as info:
        MHAConfig.from_dict({**cfg.to_dict(), "heads": 4})
    assert info.value.field == "heads"


def test_replace_validates():
    with pytest.raises(ConfigError):
        MHAConfig().replace(n_heads=7)


sizes = st.integers(-2, 130) | st.sampled_from([CAPS["d_model"] + 1, CAPS["n_heads"] + 1, 2**16 - 1])


@settings(max_examples=300, deadline=None)
@given(d_model=sizes, heads=sizes, kv=st.none() | sizes,
       tokens=st.none() | st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=4).map(tuple))
def test_every_suggestion_gives_a_valid_config(d_model, heads, kv, tokens):
    data = dict(d_model=d_model, n_heads=heads, n_kv_heads=kv, seq=3, tokens=tokens)
    try:
        MHAConfig(**data)
    except ConfigError as err:
        first = err
    else:
        assume(False)  # only invalid triples are of interest
    assert first.suggestions, first.message  # integer mistakes always come with a fix
    for fix in first.suggestions:
        fixed = {**data, **fix}  # what the window does with a suggestion button
        try:
            MHAConfig(**fixed)
        except ConfigError as err:
            pytest.fail(f"{first.message!r}: suggestion {fix} still invalid: {err.message}")

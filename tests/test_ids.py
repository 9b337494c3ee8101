"""Object ids: `prefix_` + 10 base32 digits of milliseconds + 16 of randomness, sorting by creation."""

from __future__ import annotations

import re
import time

from aitp import ids

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def decode(digits: str) -> int:
    value = 0
    for digit in digits:
        value = value * 32 + ALPHABET.index(digit)
    return value


def test_an_id_is_the_prefix_and_26_crockford_digits() -> None:
    assert re.fullmatch(r"msg_[0-9a-hjkmnp-tv-z]{26}", ids.new_id("msg"))


def test_the_first_ten_digits_are_the_creation_time_in_ms() -> None:
    before = time.time_ns() // 1_000_000
    made = ids.new_id("thread")
    after = time.time_ns() // 1_000_000
    assert before <= decode(made.removeprefix("thread_")[:10]) <= after


def test_ids_made_later_sort_after_earlier_ones_even_within_one_ms() -> None:
    made = [ids.new_id("msg") for _ in range(5000)]
    assert made == sorted(made) and len(set(made)) == len(made)


def test_encoding_is_positional_base32_most_significant_first() -> None:
    assert ids._encode(0, 26) == "0" * 26
    assert ids._encode(2**130 - 1, 26) == "z" * 26
    assert ids._encode(31, 4) == "000z" and ids._encode(32, 4) == "0010"
    value = 0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0 >> 2
    assert decode(ids._encode(value, 26)) == value

"""Display names that cannot be borrowed: a comparison key under which look-alike names are equal.

`name_key` folds what a reader does not see (case, spacing, punctuation, symbols, invisible and bidi characters,
compatibility forms such as fullwidth letters) and then maps every character to its prototype in Unicode's
confusables table: the UTS #39 skeleton. Two names with the same key read as the same name; "" means "no key".

The skeleton comes from ICU's SpoofChecker (the `icu` module of PyICU, shipped as the `pyicu-wheels` binary
wheel): ICU is the reference implementation of UTS #39 and builds its table from Unicode's confusables.txt, while
`confusable_homoglyphs` keeps only an undirected homoglyph list (no prototypes), `confusables` expands every
name into all its variants from a 2020 table, and `disarm` folds toward a target script with rows of its own.
Case folding, normalization and the character classes come from the same ICU, so a key depends on one Unicode
version (ICU's, not Python's): a new ICU can move keys, and tests/identity/test_names.py pins a few to say so.

The table decides, nothing is added to it: "m" and "rn" share a key, so do "0" and "O" and "1" and "l", but "5"
and "S" do not. Case is folded before the skeleton (so "SHIP" and "ship" agree), which means a capital "I"
standing in for "l" is not caught: the table maps "I" to "l" but not "i", and "i" must stay apart from "l".
"""

from __future__ import annotations

import icu

__all__ = ["confusable", "name_key"]

# NFKC_Casefold is NFKC, then case folding, then NFKC again, with Default_Ignorable_Code_Point characters
# removed (zero width spaces and joiners, soft hyphen, bidi marks, variation selectors): the first step and the
# "casefold again, NFKC again" after the skeleton, in one call.
_NFKC_CASEFOLD = icu.Normalizer2.getNFKCCasefoldInstance()

# What a reader does not see as part of the name: separators, punctuation, symbols, controls, format and
# unassigned and private-use code points, lone surrogates, and default ignorables (some are marks or letters).
_UNSEEN = icu.UnicodeSet(r"[[:Z:][:P:][:S:][:C:][:Default_Ignorable_Code_Point:]]")
_UNSEEN.freeze()  # frozen sets are safe to read from many threads at once

# The skeleton ignores the checker's settings, and ICU's calls on a const checker are safe from many threads.
_SPOOF = icu.SpoofChecker()
_SKELETON_TYPE = 0  # ignored since ICU 58, when the four kinds of skeleton became one

# Each step below is linear and a key is at most 15 times its name, so a fixed number of rounds keeps the whole
# linear. No code point needs more than three skeleton rounds (the tests check that every one's key is its own
# key), so four leaves room for a table that grows longer chains.
_ROUNDS = 4


def name_key(display_name: str) -> str:
    """The key under which display names a person would read as the same are equal; "" for a name of nothing."""
    key = _clean(display_name)
    for _ in range(_ROUNDS):
        if not key:
            break
        # the skeleton is NFD and case-sensitive: folding it again can meet another row of the table, so the
        # folds repeat until nothing changes, which makes name_key(name_key(x)) == name_key(x)
        folded = _clean(_SPOOF.getSkeleton(_SKELETON_TYPE, key))
        if folded == key:
            break
        key = folded
    return key


def confusable(a: str, b: str) -> bool:
    """Whether `a` and `b` read as the same name; a name with no key (only punctuation, say) matches nothing."""
    key = name_key(a)
    return key != "" and key == name_key(b)


def _clean(text: str) -> str:
    """NFKC_Casefold `text` and drop what is not seen, until neither changes it."""
    for _ in range(_ROUNDS):
        text = _NFKC_CASEFOLD.normalize(text)
        if _UNSEEN.containsNone(text):
            break
        # dropping a character can bring a base letter next to its combining mark, so normalize once more
        text = "".join(c for c in text if not _UNSEEN.contains(c))
    return text

"""Word forms: the stem a token shares with its inflections (rotation ↔ rotated).

Snowball stemmers through PyStemmer (C; imports in under a millisecond, so the
search path can use it). The language follows the script: English for ASCII
words, Russian for Cyrillic; identifiers (digits, ``_``) and other scripts are
their own stem, because stemming them would merge names that mean different
things.
"""

from __future__ import annotations

import re
from functools import lru_cache

_ASCII_WORD = re.compile(r"[a-z]+\Z")
_CYRILLIC_WORD = re.compile(r"[а-яё]+\Z")
MIN_STEM_LEN = 4  # shorter words are too ambiguous to fold


@lru_cache(maxsize=1)
def _stemmers():
    try:
        import Stemmer
    except ImportError:  # degrade to exact forms rather than fail
        return None
    out = Stemmer.Stemmer("english"), Stemmer.Stemmer("russian")
    for s in out:
        # PyStemmer's own word cache (10,000 words by default) churns on an index
        # run's vocabulary and makes stemming a flush several times slower
        # (bench/README.md); stem() keeps an lru_cache of its own.
        s.maxCacheSize = 0
    return out


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    if len(token) < MIN_STEM_LEN:
        return token
    stemmers = _stemmers()
    if stemmers is None:
        return token
    if _ASCII_WORD.match(token):
        return stemmers[0].stemWord(token)
    if _CYRILLIC_WORD.match(token):
        return stemmers[1].stemWord(token)
    return token


def stem_many(tokens: list[str]) -> list[str]:
    """``[stem(t) for t in tokens]``, with each language's words stemmed in one
    call into the C stemmer: an index run stems every new token of a flush."""
    stemmers = _stemmers()
    out = list(tokens)
    if stemmers is None:
        return out
    at: tuple[list[int], list[int]] = ([], [])
    for i, t in enumerate(tokens):
        if len(t) < MIN_STEM_LEN:
            continue
        if t.isascii():
            if t.isalpha() and t.islower():  # [a-z]+
                at[0].append(i)
        elif _CYRILLIC_WORD.match(t):
            at[1].append(i)
    for which, idx in enumerate(at):
        if idx:
            for i, st in zip(idx, stemmers[which].stemWords([tokens[i] for i in idx])):
                out[i] = st
    return out

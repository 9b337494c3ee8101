"""Object ids: a prefix plus a time-ordered, random-tailed token (ULID-like).

Ids sort by creation time, so listing threads can page by id alone.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """Return `prefix_<26 chars>`; ids made later in this process sort after earlier ones."""
    global _last_ms, _last_rand
    with _lock:
        now = time.time_ns() // 1_000_000
        if now <= _last_ms:
            now = _last_ms
            _last_rand += 1
        else:
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to increment
        _last_ms = now
        rand = _last_rand
    return f"{prefix}_{_encode(now, 10)}{_encode(rand, 16)}"

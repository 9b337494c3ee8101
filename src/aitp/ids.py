"""Object ids: a prefix plus a time-ordered, random-tailed token (ULID-like).

Ids sort by creation time, so listing threads can page by id alone.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # every 10-bit value as two digits
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    """`value` as `length` (even) base32 digits, most significant first, zero-padded; two at a time."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(5 * length - 10, -1, -10)])


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
    return f"{prefix}_{_encode((now << 80) | rand, 26)}"  # 10 digits of time, 16 of randomness

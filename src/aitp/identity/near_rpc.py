"""Whether a public key is a full-access key of a NEAR account, asked of a NEAR JSON-RPC node.

`query` with `view_access_key` answers the key's permission: "FullAccess", or an object such as
`{"FunctionCall": {...}}` for a key limited to some contract calls, which does not speak for the account (nor,
conservatively, does any other kind named by an object, such as the newer gas keys). A key or account that does not
exist comes back as a JSON-RPC error whose `cause.name` is UNKNOWN_ACCESS_KEY or UNKNOWN_ACCOUNT, or, as
nearcore still answers plain `query` calls for compatibility, as a result with an `error` string ("access key
... does not exist while viewing", "account ... does not exist while viewing"). Anything else means the RPC
could not say: `near_rpc_unreachable`, never a "no".
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from aitp.identity.actor_ids import is_near
from aitp.identity.near import parse_public_key, public_key_string
from aitp.identity.refusals import ProofRefused

MAX_ANSWER_BYTES = 64 * 1024
NO_SUCH_KEY = ("UNKNOWN_ACCESS_KEY", "UNKNOWN_ACCOUNT")


def _unreachable(message: str) -> ProofRefused:
    return ProofRefused("near_rpc_unreachable", f"The NEAR RPC could not tell whether the key may sign: {message}")


async def _answer(response: httpx.Response) -> Any:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise _unreachable(f"its answer is larger than {MAX_ANSWER_BYTES} bytes.")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise _unreachable(f"its answer is larger than {MAX_ANSWER_BYTES} bytes.")  # read no further
    try:
        return json.loads(body)
    except ValueError:
        return None


def _says_missing(text: Any) -> bool:
    return isinstance(text, str) and "does not exist" in text


def _permission(answer: Any, status: int) -> bool:
    """What the answer says of the key: True (full access), False (no key, or a limited one)."""
    if not isinstance(answer, dict):
        raise _unreachable(f"HTTP {status}, not a JSON-RPC answer.")
    error = answer.get("error")
    if error is not None:
        cause = error.get("cause") if isinstance(error, dict) else None
        if isinstance(cause, dict) and cause.get("name") in NO_SUCH_KEY:
            return False
        if isinstance(error, dict) and _says_missing(error.get("data")):  # nodes before structured errors
            return False
        name = cause.get("name") if isinstance(cause, dict) else None
        raise _unreachable(f"it answered the error {name or 'without a cause'} (HTTP {status}).")
    result = answer.get("result")
    if status != 200 or not isinstance(result, dict):
        raise _unreachable(f"HTTP {status}, without a result.")
    if "error" in result:
        if _says_missing(result["error"]):
            return False
        raise _unreachable("it answered an error.")
    permission = result.get("permission")
    if permission == "FullAccess":
        return True
    if isinstance(permission, dict) and len(permission) == 1:
        # {"FunctionCall": {...}}, and newer kinds such as gas keys: not a plain full-access key, so no
        return False
    raise _unreachable("its answer has no access key permission this service knows.")


async def full_access_key(
    rpc_url: str, account_id: str, public_key: str, *, client: httpx.AsyncClient, timeout: float
) -> bool:
    """Whether `public_key` ("ed25519:...") is a full-access key of the NEAR account `account_id` now (the
    latest final block): True, or False when it is not a key of the account (or the account does not exist) or
    only a function-call key; `near_rpc_unreachable` when the RPC does not say within `timeout` seconds."""
    if not is_near(account_id):
        raise ProofRefused("invalid_actor_id", f"{account_id[:80]!r} is not a NEAR account id.")
    key = public_key_string(parse_public_key(public_key))
    request = {
        "jsonrpc": "2.0",
        "id": "aitp",
        "method": "query",
        "params": {
            "request_type": "view_access_key",
            "finality": "final",
            "account_id": account_id,
            "public_key": key,
        },
    }
    try:
        async with asyncio.timeout(timeout):
            async with client.stream("POST", rpc_url, json=request, follow_redirects=False) as response:
                answer = await _answer(response)
                return _permission(answer, response.status_code)
    except TimeoutError as error:
        raise _unreachable(f"no answer within {timeout:g} s.") from error
    except httpx.HTTPError as error:
        raise _unreachable(f"{type(error).__name__}.") from error

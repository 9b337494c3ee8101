"""NEAR accounts prove who they are with a NEP-413 signed message (what a wallet's `signMessage` returns).

The bytes signed are sha256(borsh(u32 2**31 + 413) ++ borsh(Payload)), with Payload
`{message: String, nonce: [u8; 32], recipient: String, callbackUrl: Option<String>}`
(https://github.com/near/NEPs/blob/master/neps/nep-0413.md); the tag keeps a signed message from ever being a
valid transaction. Keys are written as NEAR writes them: "ed25519:" + base58 of the 32 public bytes, or of the
64 private bytes (seed, then public key). Whether the key may speak for an account is the RPC's question
(`aitp.identity.near_rpc`); an implicit account's id is its key (`implicit_account_of`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import base58
import borsh_construct as borsh
import construct
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from aitp.identity.refusals import ProofRefused

NEP413_TAG = 2**31 + 413
NONCE_BYTES = 32
PREFIX = "ed25519:"
MAX_KEY_TEXT = 128  # base58 is decoded in quadratic time: a longer string is refused before
MAX_SIGNATURE_TEXT = 128

_PAYLOAD = borsh.CStruct(
    "message" / borsh.String,
    "nonce" / construct.Bytes(NONCE_BYTES),
    "recipient" / borsh.String,
    "callbackUrl" / borsh.Option(borsh.String),
)


def nep413_message(*, message: str, nonce: bytes, recipient: str, callback_url: str | None = None) -> bytes:
    """The bytes whose sha256 a NEP-413 signature signs: the tag, then the payload, borsh-encoded."""
    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"A NEP-413 nonce is {NONCE_BYTES} bytes, not {len(nonce)}.")
    payload = {"message": message, "nonce": bytes(nonce), "recipient": recipient, "callbackUrl": callback_url}
    return borsh.U32.build(NEP413_TAG) + _PAYLOAD.build(payload)


def nep413_hash(*, message: str, nonce: bytes, recipient: str, callback_url: str | None = None) -> bytes:
    return hashlib.sha256(
        nep413_message(message=message, nonce=nonce, recipient=recipient, callback_url=callback_url)
    ).digest()


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_key_string(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """A public key as NEAR writes it: "ed25519:<base58>"."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return PREFIX + base58.b58encode(_raw(public)).decode()


def private_key_string(key: Ed25519PrivateKey) -> str:
    """A private key as NEAR writes it: "ed25519:<base58 of seed + public key>"."""
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return PREFIX + base58.b58encode(seed + _raw(key.public_key())).decode()


def _base58_key(text: Any, what: str) -> bytes:
    if not isinstance(text, str) or not text.startswith(PREFIX) or len(text) > MAX_KEY_TEXT:
        raise ValueError(f"The {what} is not an ed25519 key written as 'ed25519:<base58>'.")
    try:
        return base58.b58decode(text.removeprefix(PREFIX))
    except ValueError as error:
        raise ValueError(f"The {what} is not valid base58.") from error


def parse_public_key(text: Any) -> Ed25519PublicKey:
    """A public key written "ed25519:<base58 of 32 bytes>"; `proof_malformed` otherwise."""
    try:
        raw = _base58_key(text, "public key")
        if len(raw) != 32:
            raise ValueError(f"The public key is {len(raw)} bytes, not 32.")
    except ValueError as error:
        raise ProofRefused("proof_malformed", str(error)) from error
    return Ed25519PublicKey.from_public_bytes(raw)


def parse_private_key(text: str) -> Ed25519PrivateKey:
    """A private key written "ed25519:<base58>": of 64 bytes (seed and public key, as NEAR keeps them) or of
    the 32-byte seed alone. ValueError otherwise (without the key in the message)."""
    raw = _base58_key(text, "private key")
    if len(raw) not in (32, 64):
        raise ValueError(f"The private key is {len(raw)} bytes, not 64 (seed and public key) or 32 (seed).")
    key = Ed25519PrivateKey.from_private_bytes(raw[:32])
    if len(raw) == 64 and raw[32:] != _raw(key.public_key()):
        raise ValueError("The private key's last 32 bytes are not the public key of its seed.")
    return key


def implicit_account_of(public_key: str) -> str:
    """The implicit account an ed25519 key controls: its 32 bytes in lowercase hex."""
    return _raw(parse_public_key(public_key)).hex()


def sign_nep413(
    private_key: str | Ed25519PrivateKey,
    *,
    message: str,
    nonce: bytes,
    recipient: str,
    callback_url: str | None = None,
) -> dict[str, str]:
    """Sign as a NEAR wallet does: `{"public_key": "ed25519:...", "signature": <standard base64>}`."""
    key = parse_private_key(private_key) if isinstance(private_key, str) else private_key
    digest = nep413_hash(message=message, nonce=nonce, recipient=recipient, callback_url=callback_url)
    return {"public_key": public_key_string(key), "signature": base64.b64encode(key.sign(digest)).decode()}


def _signature_bytes(text: Any) -> bytes:
    if not isinstance(text, str) or len(text) > MAX_SIGNATURE_TEXT:
        raise ProofRefused("proof_malformed", "The NEP-413 signature is not a base64 string.")
    standard = text.rstrip("=").replace("-", "+").replace("_", "/")  # url-safe base64 read as standard
    try:
        raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except binascii.Error as error:
        raise ProofRefused("proof_malformed", "The NEP-413 signature is not valid base64.") from error
    if len(raw) != 64:
        raise ProofRefused("proof_malformed", f"The NEP-413 signature is {len(raw)} bytes, not 64.")
    return raw


def verify_nep413(proof: Any, *, message: str, nonce: bytes, recipient: str, callback_url: str | None = None) -> str:
    """The public key that signed this NEP-413 message (`{"public_key", "signature"}`, or a wallet's answer
    with `publicKey`); `proof_malformed` for the shape, `bad_signature` when it does not verify."""
    if not isinstance(proof, dict):
        raise ProofRefused("proof_malformed", "A NEP-413 proof is an object with public_key and signature.")
    public_key = proof.get("public_key", proof.get("publicKey"))
    if "public_key" in proof and "publicKey" in proof and proof["public_key"] != proof["publicKey"]:
        raise ProofRefused("proof_malformed", "The NEP-413 proof names two different public keys.")
    key = parse_public_key(public_key)
    signature = _signature_bytes(proof.get("signature"))
    digest = nep413_hash(message=message, nonce=nonce, recipient=recipient, callback_url=callback_url)
    try:
        key.verify(signature, digest)
    except InvalidSignature as error:
        raise ProofRefused(
            "bad_signature", "The NEP-413 signature does not verify for this message, nonce and recipient."
        ) from error
    return public_key_string(key)  # its one spelling

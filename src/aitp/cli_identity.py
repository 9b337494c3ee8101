"""`aitp identity`: make a key pair and print what to publish, and sign in with a key file (no admin).

    aitp identity keygen --actor shop.example.com --out shop-key.json > aitp.json
    # publish aitp.json at https://shop.example.com/.well-known/aitp.json, then:
    aitp identity sign-in --url https://aitp.example --actor shop.example.com --key-file shop-key.json

A NEAR key pair (`--kind near`) is written as NEAR writes keys (`ed25519:...`); its implicit account (the public
key in hex) signs in offline, a named account once the public key is one of its full-access keys.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from aitp.identity import document_for, generate_keypair, implicit_account_of, near_keypair


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    identity_p = sub.add_parser("identity", help="prove who an agent is: key pairs and sign-in without an admin")
    identity_sub = identity_p.add_subparsers(dest="identity_command", required=True)
    keygen = identity_sub.add_parser(
        "keygen", help="make a key pair: the private key to a file, what to publish to stdout"
    )
    keygen.add_argument("--out", required=True, help="where to write the private key (refused if it exists)")
    keygen.add_argument(
        "--kind", choices=["ed25519", "p256", "near"], default="ed25519", help="key type (default ed25519)"
    )
    keygen.add_argument("--kid", help="the key's id in aitp.json (default: its RFC 7638 thumbprint)")
    keygen.add_argument("--agent-path", help="publish the key for one agent path only, e.g. /sales")
    sign_in_p = identity_sub.add_parser("sign-in", help="sign in with a key file and print the API key")
    sign_in_p.add_argument("--url", required=True, help="the aitp server, e.g. https://aitp.example")
    sign_in_p.add_argument("--actor", required=True, help="a host name (domain agent) or a NEAR account")
    sign_in_p.add_argument("--key-file", required=True, help="the private key (a JWK or PEM file, or ed25519:...)")


def _write_private(path: Path, text: str) -> None:
    # created, never overwritten, readable by its owner only
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def keygen(args: argparse.Namespace) -> int:
    path = Path(args.out)
    if path.exists():
        print(f"aitp: {path} exists; choose another --out (a key is never overwritten)", file=sys.stderr)
        return 1
    if args.kind == "near":
        private, public = near_keypair()
        _write_private(path, private + "\n")
        account = implicit_account_of(public)
        print(json.dumps({"public_key": public, "implicit_account": account}, indent=2))
        print(
            f"(private key in {path}; sign in as {account}, or add {public} as a full-access key of your "
            "named account)",
            file=sys.stderr,
        )
        return 0
    pair = generate_keypair(args.kind, kid=args.kid)
    _write_private(path, json.dumps(pair.private_jwk, indent=2) + "\n")
    agents = {args.agent_path: [pair.public_jwk]} if args.agent_path else None
    print(json.dumps(document_for([] if agents else [pair.public_jwk], agents), indent=2))
    print(
        f"(private key in {path}, kid {pair.kid}; publish the JSON above at https://<your host>/.well-known/aitp.json)",
        file=sys.stderr,
    )
    return 0


def sign_in(args: argparse.Namespace) -> int:
    from aitp.client._errors import AitpError
    from aitp.client._sign_in import sign_in as sign_in_with

    try:
        key = Path(args.key_file).read_text()
    except OSError as error:
        print(f"aitp: cannot read {args.key_file}: {error.strerror}", file=sys.stderr)
        return 1
    try:
        token = asyncio.run(sign_in_with(args.url, args.actor, key))
    except AitpError as error:
        print(f"aitp: sign-in refused: {error}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"aitp: {error}", file=sys.stderr)
        return 1
    print(token["key"])
    verification = token["verification"]
    print(
        f"(actor {token['actor']}, {verification['kind']} key {verification['key_id']}, key id {token['id']}, "
        f"expires at {token['expires_at']}; the key is shown only now)",
        file=sys.stderr,
    )
    return 0


def identity_command(args: argparse.Namespace) -> int:
    return keygen(args) if args.identity_command == "keygen" else sign_in(args)

"""`aitp serve`, `aitp keys ...`, `aitp schemas export`."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from aitp import redaction
from aitp.config import Settings
from aitp.store import Store, open_store
from aitp.store.keys import KeyRecord

T = TypeVar("T")

# Young collections every 700 allocations (CPython's default) catch the objects in flight while an event
# goes out to a thousand subscribers and promote them to the old generation, which then fills up and is
# collected in full (every object of every connection: 100+ ms pauses). Rarer young collections let
# those objects die young; what is truly cyclic garbage is still collected, a little later.
GC_THRESHOLDS = tuple(int(x) for x in os.environ.get("AITP_GC_THRESHOLDS", "50000,20,100").split(","))


def _with_store(settings: Settings, fn: Callable[[Store], Awaitable[T]]) -> T:
    async def run() -> T:
        store = open_store(settings.store_url)
        await store.open()
        try:
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(run())


def serve(settings: Settings) -> None:
    import uvicorn

    from aitp.app import create_app

    # the service's own log lines (registry sync, event tailer, slow consumers) next to uvicorn's
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    redaction.redact_root_handlers()  # no key (nor store password) in a log line: see aitp.redaction
    from aitp.services.codes import SERVE_LINK_TTL, admin_sign_in_code
    from aitp.services.keys import ensure_admin_key

    new_admin_key = None if settings.admin_key else _with_store(settings, ensure_admin_key)
    shown_host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    base = f"http://{shown_host}:{settings.port}"
    print(f"aitp: store {redaction.redact(settings.store_url)}", flush=True)
    if new_admin_key:
        print(
            "aitp: created the admin key (shown once, stored only as a hash):\n"
            f"    {new_admin_key}\n"
            f"aitp: API at {base}/v1  (try: curl -H 'Authorization: Bearer {new_admin_key}' {base}/v1/threads)\n"
            f"aitp: API docs at {base}/docs",
            flush=True,
        )
    else:
        print(f"aitp: API at {base}/v1, docs at {base}/docs", flush=True)
    admin_key = new_admin_key or settings.admin_key
    if admin_key:
        # a one-time code, never the key: the link works once, for an hour, and its fragment reaches no server
        code = _with_store(settings, lambda store: admin_sign_in_code(store, admin_key, SERVE_LINK_TTL))
        print(f"aitp: web UI, sign in as admin once within the hour: {base}/#code={code}", flush=True)
    else:
        print(f"aitp: web UI at {base}/", flush=True)
    app = create_app(settings)
    # What start-up built (modules, routes, compiled validators) lives as long as the process: moved out of
    # the cyclic GC's reach, it no longer lengthens every full collection (pauses seen by live subscribers).
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    uvicorn.run(app, **uvicorn_options(settings))


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How `aitp serve` runs uvicorn (the ingest benchmark serves its baseline with the same options)."""
    from aitp.http_protocol import http_protocol

    return {
        "host": settings.host,
        "port": settings.port,
        "log_level": "info",
        "log_config": redaction.uvicorn_log_config(),  # its handlers redact secrets (`?token=` keys)
        # uvicorn's httptools protocol, plus limits on the request head (size, fields, time: 431, 408) and
        # on open connections (503 at once beyond AITP_MAX_CONNECTIONS, raising the open-file limit to fit)
        "http": http_protocol(settings),
        # HTTP keep-alive: uvicorn's 5 s default let idle connections close while a client (200 of them
        # in a load test) was sending its next request on them: "connection closed without response"
        "timeout_keep_alive": 30,
        # WebSocket keep-alive: uvicorn pings every peer and drops one that stops answering
        "ws_ping_interval": settings.keepalive_seconds,
        "ws_ping_timeout": settings.keepalive_seconds,
        # a WebSocket frame (a post over the socket) is limited like a request body; bigger ones close with 1009
        "ws_max_size": settings.max_body_bytes if settings.max_body_bytes > 0 else 16 * 1024 * 1024,
        # off by default: per connection it costs ~35 KiB and a deflate of every event sent (bench/fanout.py)
        "ws_per_message_deflate": settings.ws_compression,
    }


def _print_key(key: KeyRecord) -> None:
    flags = " admin" if key.admin else ""
    scopes = f" scopes={','.join(key.scopes)}" if key.scopes else ""
    print(f"{key.id}  actor={key.actor}{flags}{scopes}  {key.prefix}…")


def _store_refusal(settings: Settings, args: argparse.Namespace) -> str | None:
    """Why a key command must not go on: its store does not exist, so it cannot be the one a server
    uses, and only `keys create --create-store` may create one. None when it may go on."""

    async def exists() -> bool:
        return await open_store(settings.store_url).exists()

    if asyncio.run(exists()):
        return None
    if getattr(args, "create_store", False):
        print(f"aitp: creating a new store at {settings.store_url}", file=sys.stderr)
        return None
    hint = ", or add --create-store to start a new one" if args.keys_command == "create" else ""
    return (
        f"aitp: there is no store at {settings.store_url} (looked from {Path.cwd()}).\n"
        f"aitp: name the store your server uses with --store or AITP_STORE{hint}."
    )


def keys_command(settings: Settings, args: argparse.Namespace) -> int:
    from aitp.services import keys

    refusal = _store_refusal(settings, args)
    if refusal:
        print(refusal, file=sys.stderr)
        return 1
    if args.keys_command == "create":
        created = _with_store(
            settings, lambda s: keys.create_key(s, args.actor, admin=args.admin, scopes=args.scope or [])
        )
        record = created.record
        print(created.secret)
        print(
            f"(id {record.id}, actor {record.actor}{', admin' if record.admin else ''}, "
            f"store {settings.store_url}; the key is shown only now)",
            file=sys.stderr,
        )
        return 0
    if args.keys_command == "list":
        for key in _with_store(settings, keys.list_keys):
            _print_key(key)
        return 0
    from aitp.errors import APIError

    try:
        _with_store(settings, lambda s: keys.revoke_key(s, args.key_id))
    except APIError as exc:
        print(f"aitp: {exc.message}", file=sys.stderr)
        return 1
    print(f"revoked {args.key_id}")
    return 0


def schemas_command(args: argparse.Namespace) -> int:
    from aitp.bindings.openai_threads import wire_schemas

    directory = Path(args.dir)
    if args.check:
        changed = wire_schemas.drift(directory)
        for name in changed:
            print(f"out of date: {directory / name}", file=sys.stderr)
        return 1 if changed else 0
    for path in wire_schemas.export(directory):
        print(path)
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="aitp", description="AITP thread service")
    sub = root.add_subparsers(dest="command", required=True)

    # --store is accepted before or after a sub-command (`aitp keys --store S create` and `aitp keys create
    # --store S`); SUPPRESS keeps a sub-command's unset option from overwriting one given before it.
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--store", default=argparse.SUPPRESS, help="sqlite:///path/to/aitp.db or mongodb://... (env AITP_STORE)"
    )

    serve_p = sub.add_parser("serve", help="run the HTTP service", parents=[store])
    serve_p.add_argument("--host", help="bind address (default 127.0.0.1, env AITP_HOST)")
    serve_p.add_argument("--port", type=int, help="port (default 8000, env AITP_PORT)")

    keys_p = sub.add_parser("keys", help="manage API keys", parents=[store])
    keys_sub = keys_p.add_subparsers(dest="keys_command", required=True)
    create_p = keys_sub.add_parser("create", help="create a key and print it", parents=[store])
    create_p.add_argument("--actor", required=True, help="the actor id the key acts as")
    create_p.add_argument("--admin", action="store_true", help="an admin key (may do everything)")
    create_p.add_argument("--scope", action="append", choices=["capabilities:write"], help="extra scope")
    create_p.add_argument(
        "--create-store", action="store_true", help="create the store if it does not exist (else: refused)"
    )
    keys_sub.add_parser("list", help="list keys (never their secrets)", parents=[store])
    revoke_p = keys_sub.add_parser("revoke", help="revoke a key by id", parents=[store])
    revoke_p.add_argument("key_id")

    schemas_p = sub.add_parser("schemas", help="wire-object JSON Schemas")
    schemas_sub = schemas_p.add_subparsers(dest="schemas_command", required=True)
    export_p = schemas_sub.add_parser("export", help="write schemas/*.schema.json from the models")
    export_p.add_argument("--dir", default="schemas")
    export_p.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings.from_env()
    store_url = getattr(args, "store", None)
    if args.command == "serve":
        serve(settings.with_overrides(host=args.host, port=args.port, store_url=store_url))
        return 0
    if args.command == "keys":
        return keys_command(settings.with_overrides(store_url=store_url), args)
    return schemas_command(args)


if __name__ == "__main__":
    sys.exit(main())

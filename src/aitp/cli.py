"""`aitp serve`, `aitp keys ...`, `aitp schemas export`."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from aitp import cli_identity, redaction
from aitp.auth import expired
from aitp.config import Settings
from aitp.store import Store, StoreError, in_memory, opened, store_exists
from aitp.store.keys import KeyRecord

T = TypeVar("T")


def _with_store(settings: Settings, fn: Callable[[Store], Awaitable[T]]) -> T:
    async def run() -> T:
        store = await opened(settings.store_url)
        try:
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(run())


def serve(settings: Settings, workers: int = 1) -> int:
    """`aitp serve`: what must happen once (the store created, the admin key and sign-in link printed) here,
    then the server, in this process or in `workers` worker processes (aitp.server.serving)."""
    from aitp.bindings.http.errors import envelope
    from aitp.server import serving

    if in_memory(settings.store_url):
        print(
            f"aitp: {settings.store_url} is a store that lives inside one process and ends with it: the admin key "
            "and sign-in code made before the server starts would be gone, and each of --workers would have its "
            "own.\naitp: give a file instead, e.g. --store sqlite:///aitp-data/aitp.db",
            file=sys.stderr,
        )
        return 2
    # a MongoDB that does not answer is said in one line now, after 5 s, rather than as the server's start-up
    # traceback after 30 s (with AITP_ADMIN_KEY set nothing else reaches the store before the server starts)
    asyncio.run(store_exists(settings.store_url))
    serving.configure_logging()
    from aitp.services.keys import ensure_admin_key

    new_admin_key = None if settings.admin_key else _with_store(settings, ensure_admin_key)
    base = _base_url(settings)
    print(f"aitp: store {redaction.redact(settings.store_url)}", flush=True)
    if new_admin_key:
        print(
            "aitp: created the admin key (shown once, stored only as a hash):\n"
            f"    {new_admin_key}\n"
            f"aitp: API at {base}/v1  (try: curl -H 'Authorization: Bearer {new_admin_key}' {base}/v1/threads)\n"
            f"aitp: API docs at {base}/docs",
            flush=True,
        )
        # the first start: whoever reads the key may read a link (it is worth less than the key), printed with it
        print(
            f"aitp: web UI, sign in as admin once within the hour: {_admin_link(settings, new_admin_key)}", flush=True
        )
    else:
        print(f"aitp: API at {base}/v1, docs at {base}/docs", flush=True)
        if settings.admin_key and sys.stderr.isatty():
            # a person at a terminal: the link, on the terminal only (a log file is not written through a TTY)
            link = _admin_link(settings, settings.admin_key)
            print(f"aitp: web UI, sign in as admin once within the hour: {link}", file=sys.stderr, flush=True)
        else:  # on every later start the output may be a log others read: no live link in it
            print(f"aitp: web UI at {base}/ (a sign-in link for the admin: aitp admin link)", flush=True)
    if workers > 1:
        print(f"aitp: {workers} worker processes on one port (limits and caches are per worker)", flush=True)
    return serving.serve(settings, workers, render=envelope)  # refusals below the app: the HTTP faces' body


def _base_url(settings: Settings) -> str:
    shown_host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"http://{shown_host}:{settings.port}"


def _admin_link(settings: Settings, admin_key: str, base: str | None = None) -> str:
    """A link to the web UI that signs in as the admin once, within the hour: a one-time code made by
    `admin_key`, never the key (and a URL fragment reaches no server)."""
    from aitp.services.codes import SERVE_LINK_TTL, admin_sign_in_code

    code = _with_store(settings, lambda store: admin_sign_in_code(store, admin_key, SERVE_LINK_TTL))
    return f"{base or _base_url(settings)}/#code={code}"


def _read_key() -> str:
    """The admin key, asked for on a terminal (not echoed), else the first line of stdin."""
    if sys.stdin.isatty():
        return getpass.getpass("aitp: the admin key: ").strip()
    return sys.stdin.readline().strip()


def admin_command(settings: Settings, args: argparse.Namespace) -> int:
    """`aitp admin link`: a new sign-in link for the admin, printed to the terminal that asked for it. The admin
    key is AITP_ADMIN_KEY, else read from the terminal (or stdin), and must be an admin key of the store."""
    from aitp.auth import authenticate
    from aitp.errors import Unauthenticated

    if not asyncio.run(store_exists(settings.store_url)):
        shown = redaction.redact(settings.store_url)
        print(f"aitp: there is no store at {shown} (looked from {Path.cwd()}).", file=sys.stderr)
        return 1
    admin_key = settings.admin_key or _read_key()
    try:  # AITP_ADMIN_KEY is the server's as it is given to it; a key read must be an admin key of the store
        principal = _with_store(settings, lambda store: authenticate(store, admin_key, settings.admin_key))
    except Unauthenticated as refused:
        print(f"aitp: {refused.message}", file=sys.stderr)
        return 1
    if not principal.admin:
        print("aitp: that key is not an admin key.", file=sys.stderr)
        return 1
    print(_admin_link(settings, admin_key, args.url.rstrip("/") if args.url else None))
    return 0


def _print_key(key: KeyRecord) -> None:
    flags = " admin" if key.admin else ""
    scopes = f" scopes={','.join(key.scopes)}" if key.scopes else ""
    expiry = ""
    if key.expires_at is not None:
        when = datetime.fromtimestamp(key.expires_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        expiry = f"  {'expired' if expired(key.expires_at) else 'expires'} {when}"
    print(f"{key.id}  actor={key.actor}{flags}{scopes}  {key.prefix}…{expiry}")


def _store_refusal(settings: Settings, args: argparse.Namespace) -> str | None:
    """Why a key command must not go on: its store does not exist, so it cannot be the one a server
    uses, and only `keys create --create-store` may create one. None when it may go on."""
    if asyncio.run(store_exists(settings.store_url)):
        return None
    if getattr(args, "create_store", False):
        print(f"aitp: creating a new store at {redaction.redact(settings.store_url)}", file=sys.stderr)
        return None
    hint = ", or add --create-store to start a new one" if args.keys_command == "create" else ""
    return (
        f"aitp: there is no store at {redaction.redact(settings.store_url)} (looked from {Path.cwd()}).\n"
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
            settings,
            lambda s: keys.create_key(
                s, args.actor, admin=args.admin, scopes=args.scope or [], contact_policy=settings.contact_policy
            ),
        )
        record = created.record
        print(created.secret)
        print(
            f"(id {record.id}, actor {record.actor}{', admin' if record.admin else ''}, "
            f"store {redaction.redact(settings.store_url)}; the key is shown only now)",
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


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


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
    serve_p.add_argument(
        "--workers",
        type=positive,
        default=1,
        help="processes serving the port, each an instance of the service on the store (default 1)",
    )

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

    admin_p = sub.add_parser("admin", help="the admin's sign-in", parents=[store])
    admin_sub = admin_p.add_subparsers(dest="admin_command", required=True)
    link_p = admin_sub.add_parser(
        "link",
        help="print a one-time sign-in link for the web UI, valid an hour (the admin key: AITP_ADMIN_KEY or asked)",
        parents=[store],
    )
    link_p.add_argument("--url", help="the server's address in the link (default http://AITP_HOST:AITP_PORT)")

    cli_identity.add_parser(sub)

    schemas_p = sub.add_parser("schemas", help="wire-object JSON Schemas")
    schemas_sub = schemas_p.add_subparsers(dest="schemas_command", required=True)
    export_p = schemas_sub.add_parser("export", help="write schemas/*.schema.json from the models")
    export_p.add_argument("--dir", default="schemas")
    export_p.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    return root


def _store_command(settings: Settings, args: argparse.Namespace) -> int:
    """A command on the store (`serve`, `keys`, `admin`), its store named by --store or AITP_STORE."""
    settings = settings.with_overrides(store_url=getattr(args, "store", None))
    try:
        if args.command == "serve":
            return serve(settings.with_overrides(host=args.host, port=args.port), args.workers)
        if args.command == "keys":
            return keys_command(settings, args)
        return admin_command(settings, args)
    except StoreError as error:  # a mistyped URL, a MongoDB that does not answer: one line, no traceback
        print(f"aitp: {error}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """The `aitp` command; its exit status."""
    args = parser().parse_args(argv)
    settings = Settings.from_env()
    if args.command in ("serve", "keys", "admin"):
        return _store_command(settings, args)
    if args.command == "identity":
        return cli_identity.identity_command(args)
    return schemas_command(args)


if __name__ == "__main__":
    sys.exit(main())

"""The official `openai` JS SDK (tests/js, pinned in its package-lock.json) reads a real `aitp serve`: after
every image `detail` variant written on either face, and details stored before they were checked, it lists
each thread's messages (Threads face) and each conversation's items (Conversations face), paging, without an
error, and every detail is one its type declarations allow (tests/js/read_details.mjs checks that; this test
checks each is the value expected).

Needs `node` and `npm`: without them the test is skipped, except in CI (`CI` set), where it fails (.ci/run
installs them). The SDK is installed once per package-lock into a cache directory (`$XDG_CACHE_HOME` or
~/.cache, `aitp-tests/js-<digest>`), so later runs only start node.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from aitp.events import payloads
from aitp.store import open_store
from aitp.store.records import MessageRecord, NewEvent
from aitp.testing import ServerProcess
from tests.api.test_image_detail import FILE, URL, VARIANTS
from tests.conftest import ADMIN_KEY

JS = Path(__file__).parent / "js"
LOCKED = ("package.json", "package-lock.json")
# (detail stored by a server that did not check it, as the Threads face reads it, as the Conversations face does)
LEGACY = [(None, "auto", "auto"), ("bogus", "auto", "auto"), ("HIGH", "auto", "auto"), ("original", "high", "original")]


def node_and_npm() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        return node, npm
    missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
    if os.environ.get("CI"):
        pytest.fail(f"{missing} not found in CI: .ci/run installs Debian's nodejs and npm before the tests")
    pytest.skip(f"{missing} not found: install Node.js 20+ and npm (Debian: nodejs, npm) to run the JS SDK test")


def installed_sdk(npm: str) -> Path:
    """The node_modules of tests/js's lock, installed once (`npm ci`) into the cache and reused."""
    digest = hashlib.sha256(b"".join((JS / name).read_bytes() for name in LOCKED)).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aitp-tests" / f"js-{digest}"
    modules = cache / "node_modules"
    if (modules / "openai" / "package.json").exists():
        return modules
    shutil.rmtree(cache, ignore_errors=True)  # not a finished install (removed by hand?): made again
    # installed beside, then moved in whole: an interrupted install never looks like a finished one
    building = cache.with_name(f"{cache.name}.{uuid.uuid4().hex[:8]}")
    building.mkdir(parents=True)
    try:
        for name in LOCKED:
            shutil.copy(JS / name, building / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
            cwd=building,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"npm ci failed in {building}:\n{done.stdout}\n{done.stderr}"
        try:
            building.rename(cache)
        except OSError:
            if not (modules / "openai" / "package.json").exists():  # not another run's finished install
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)  # still there only if the install failed or another won
    return modules


def run_reader(node: str, modules: Path, workdir: Path, base_url: str, key: str, thread_ids: list[str]) -> Any:
    """Run tests/js/read_details.mjs beside the cached node_modules; its JSON output."""
    (workdir / "node_modules").symlink_to(modules, target_is_directory=True)
    script = shutil.copy(JS / "read_details.mjs", workdir / "read_details.mjs")
    done = subprocess.run(
        [node, str(script), base_url, key, *thread_ids], capture_output=True, text=True, timeout=120, cwd=workdir
    )
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    assert done.returncode == 0, f"the JS SDK's reads failed (node {version}):\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def threads_parts(detail: Any) -> list[dict[str, Any]]:
    """An image_url and an image_file part with this detail ("absent": none sent)."""
    shown = {} if detail == "absent" else {"detail": detail}
    return [
        {"type": "image_url", "image_url": {"url": URL, **shown}},
        {"type": "image_file", "image_file": {"file_id": FILE, **shown}},
    ]


def conversations_parts(detail: Any) -> list[dict[str, Any]]:
    """An input_image by URL and one by file id with this detail ("absent": none sent)."""
    shown = {} if detail == "absent" else {"detail": detail}
    return [
        {"type": "input_image", "image_url": URL, **shown},
        {"type": "input_image", "file_id": FILE, **shown},
    ]


def twice(values: list[str]) -> list[str]:
    """Each message holds two image parts with the same detail."""
    return [value for value in values for _ in range(2)]


@pytest.fixture
def server(serve_store: Callable[..., ServerProcess], tmp_path: Path) -> tuple[ServerProcess, str]:
    store_url = f"sqlite:///{tmp_path / 'js.db'}"
    return serve_store(store_url, AITP_ADMIN_KEY=ADMIN_KEY, AITP_CONTACT_POLICY="anyone"), store_url


async def test_the_js_sdk_reads_every_detail_from_either_face(
    server: tuple[ServerProcess, str], tmp_path: Path
) -> None:
    node, npm = node_and_npm()
    modules = installed_sdk(npm)
    process, store_url = server
    async with httpx.AsyncClient(base_url=process.base_url + "/v1") as http:
        made = await http.post("/keys", json={"actor": "ada"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        key = made.json()["key"]
        http.headers["Authorization"] = f"Bearer {key}"

        on_threads = (await http.post("/threads", json={})).json()["id"]
        for detail, _, _ in VARIANTS:
            posted = await http.post(f"/threads/{on_threads}/messages", json={"content": threads_parts(detail)})
            assert posted.status_code == 200, posted.text
        on_conversations = (await http.post("/conversations", json={})).json()["id"]
        items = [{"type": "message", "role": "user", "content": conversations_parts(d)} for d, _, _ in VARIANTS]
        added = await http.post(f"/conversations/{on_conversations}/items", json={"items": items})
        assert added.status_code == 200, added.text

        legacy = (await http.post("/threads", json={})).json()["id"]
        posted_ids = []
        for _ in LEGACY:
            posted = await http.post(f"/threads/{legacy}/messages", json={"content": threads_parts("low")})
            posted_ids.append(posted.json()["id"])
    await store_legacy_details(store_url, legacy, posted_ids)

    read = run_reader(node, modules, tmp_path, process.base_url, key, [on_threads, on_conversations, legacy])
    on_threads_face = twice([threads for _, threads, _ in VARIANTS])
    on_conversations_face = twice([conversations for _, _, conversations in VARIANTS])
    expected = {"threads": on_threads_face, "conversations": on_conversations_face}
    assert read[on_threads] == expected
    assert read[on_conversations] == expected
    assert read[legacy] == {
        "threads": twice([threads for _, threads, _ in LEGACY]),
        "conversations": twice([conversations for _, _, conversations in LEGACY]),
    }


async def store_legacy_details(store_url: str, thread_id: str, message_ids: list[str]) -> None:
    """Rewrite the messages as an older server stored them: each image's detail as the client sent it."""
    store = open_store(store_url)
    await store.open()
    try:
        for message_id, (stored, _, _) in zip(message_ids, LEGACY, strict=True):
            record = await store.get_message(thread_id, message_id)
            assert isinstance(record, MessageRecord)
            record.content = [
                {"type": "image_url", "image_url": {"url": URL, "detail": stored}},
                {"type": "image_file", "image_file": {"file_id": FILE, "detail": stored}},
            ]
            removed = NewEvent("thread.message.deleted", payloads.removed_payload(message_id), record.created_at)
            await store.delete_message(thread_id, message_id, removed)
            record.id = f"{message_id}x"
            created = NewEvent("thread.message.created", payloads.message_payload(record), record.created_at)
            await store.append_message(record, created)
    finally:
        await store.close()

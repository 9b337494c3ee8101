"""No secret reaches the server's output: a key sent as `?token=` (how the web UI opens its WebSocket) is
redacted from every log line, the access log's included; so are the query values and user info of every URL
the server logs (a webhook receiver's in a failed attempt's line, an agent card's in httpx's line).

Specification: after WebSocket connects and SSE/GET requests carrying a key in `?token=` (accepted or
not, the parameter's name percent-encoded or not), the key appears in no line the server wrote, and
`token=[redacted]` does.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import websockets

from aitp.redaction import redact
from aitp.testing import start_server
from tests.conftest import ADMIN_KEY
from tests.support.live import sse_frames, ws_connect, ws_events
from tests.support.receiver import Receiver, receiving


async def test_a_key_sent_as_token_reaches_no_log_line(tmp_path: Path) -> None:
    server = start_server(f"sqlite:///{tmp_path / 'aitp.db'}", tmp_path / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY})
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=admin, timeout=30) as client:
            key = (await client.post("/keys", json={"actor": "alice"})).json()["key"]
            client.headers["Authorization"] = f"Bearer {key}"
            tid = (await client.post("/threads", json={})).json()["id"]
            events = f"/threads/{tid}/events"

            async with ws_connect(server.base_url, events + "/ws", key) as ws:  # accepted
                await ws_events(ws, 1)
            url = server.base_url.replace("http", "ws") + f"/v1{events}/ws?after=0&%74oken={key}"
            async with websockets.connect(url) as ws:  # the name percent-encoded: the server decodes it
                await ws_events(ws, 1)
            async with ws_connect(server.base_url, events + "/ws", key[:-1]) as ws:  # refused: 4401
                with pytest.raises(websockets.ConnectionClosed):
                    await ws.recv()
            async for _ in sse_frames(client, events, params={"token": key}):  # with its header too: served
                break
            without_header = await httpx.AsyncClient(base_url=server.base_url).get(f"/v1{events}?token={key}")
            assert without_header.status_code == 401
    finally:
        server.stop()  # its output is complete once it has exited

    lines = server.output().splitlines()
    assert [line for line in lines if key in line or key[:-1] in line] == []
    assert sum("oken=[redacted]" in line for line in lines) == 5, lines  # one per request above


def test_redaction_keeps_other_parameters_and_removes_key_shapes_and_url_passwords() -> None:
    key = "aitp_" + "k" * 43
    assert redact(f"/v1/x?after=3&token={key}&limit=2") == "/v1/x?after=3&token=[redacted]&limit=2"
    assert redact("/v1/x?tokens=1&Token=a;b&x=2") == "/v1/x?tokens=1&Token=[redacted]&x=2"
    assert redact(f"refused {key}.") == "refused aitp_[redacted]."
    assert redact("mongodb://app:s3cret@db:27017/aitp") == "mongodb://app:[redacted]@db:27017/aitp"


async def test_a_receiver_urls_query_reaches_the_receiver_and_no_log_line(tmp_path: Path) -> None:
    """A webhook URL's query (a receiver's own credentials: `?token=`, any other name) is sent as given and
    logged with its values redacted: the engine's line for a failed attempt names the URL."""
    async with receiving(Receiver(answers=[503])) as receiver:
        origin = receiver.url.removesuffix("/hooks")
        env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_WEBHOOK_ALLOW": origin + "/", "AITP_WEBHOOK_RETRY_BASE": "0.05"}
        server = start_server(f"sqlite:///{tmp_path / 'aitp.db'}", tmp_path / "serve.log", env)
        try:
            admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
            async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=admin, timeout=30) as client:
                url = f"{receiver.url}?token=receiver-s3cret&sig=sig-s3cret&plain=1"
                hook = await client.post("/webhooks", json={"actor": "shop", "url": url})
                assert hook.status_code == 200, hook.text
                await client.post("/threads", json={"actors": [{"id": "shop"}], "messages": ["hello"]})
                await receiver.wait_for(lambda r: len(r.delivered) >= 1)
        finally:
            server.stop()

    output = server.output()
    assert "s3cret" not in output
    assert f"POST {receiver.url}?token=[redacted]&sig=[redacted]&plain=[redacted] 503" in output, output


def test_url_redaction_keeps_names_and_drops_values_and_user_info() -> None:
    assert redact("POST https://u:p@h.example/a?token=t&sig=s#code=c x") == (
        "POST https://u:[redacted]@h.example/a?token=[redacted]&sig=[redacted]#code=[redacted] x"
    )
    assert redact("card at 'https://tok@agent.example/.well-known/agent.json'.") == (
        "card at 'https://[redacted]@agent.example/.well-known/agent.json'."
    )
    assert redact('"GET /v1/x?after=3 HTTP/1.1" 200') == '"GET /v1/x?after=3 HTTP/1.1" 200'  # a path: as is

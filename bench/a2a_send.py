"""A2A SendMessage (JSON-RPC, A2A 1.0) through aitp's A2A face against the a2a-sdk's own reference server,
both under wrk in the same run, rounds interleaved so that load from other processes hits both alike.

- aitp: `aitp serve` (SQLite, durable) with an actor served over A2A (`/a2a/shop`) and an AITP agent
  process answering every text message at once on its inbox WebSocket (`--agent`). A SendMessage opens a
  thread and posts the caller's message into it, waits for the agent's reply to arrive in the thread's
  event log and answers the completed task: three durable writes (thread, message, reply) and a round trip
  through the agent per request.
- reference: the SDK's `DefaultRequestHandler` with its `InMemoryTaskStore` and an `AgentExecutor` that
  completes the task with its answer at once, behind the SDK's own JSON-RPC routes (`--reference`), served
  with `aitp serve`'s uvicorn options (`aitp.server.serving.uvicorn_options`). Nothing is persisted.
Every request is a fresh text message (new messageId, no contextId: a new task in a new context each time;
aitp reserves each messageId, so that one sent again answers the same task) and both answer a completed
Task holding the agent's message. Figures: requests/s (median over rounds), latency, server CPU µs per
request (the aitp agent's CPU reported beside it); the ratio aitp/reference of requests/s per round, then
the median (target >= 1.25: the former 2x assumed a reference three times slower than a2a-sdk 1.3.0 is
here), and of server CPU per SendMessage (aim <= 0.6: aitp persists, the reference keeps tasks in memory).

Run: python bench/a2a_send.py [--rounds 3] [--duration 4] [--connections 32]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import ingest
from harness import (
    RESULTS,
    BenchError,
    Sampler,
    admin_client,
    cpu_seconds,
    create_key,
    machine_info,
    print_profile,
    run_main,
    running,
    start_aitp,
    write_result,
)
from ingest import run_wrk

from aitp import testing
from aitp.bindings.http.errors import envelope
from aitp.testing import ServerProcess

TARGET = 1.25  # aitp's requests/s over the reference's
CPU_AIM = 0.6  # aitp's server CPU per SendMessage over the reference's
HEADERS = ("A2A-Version: 1.0",)
ANSWER = "Hello! You said: "


def request_body(tmp: Path) -> Path:
    """A SendMessage request for wrk's Lua script (`__SEQ__`: a value unique per request)."""
    body = {
        "jsonrpc": "2.0",
        "id": "__SEQ__",
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m-__SEQ__",
                "role": "ROLE_USER",
                "parts": [{"text": "I would like some noise-cancelling headphones, under 300 USD please."}],
            }
        },
    }
    path = tmp / "send.json"
    path.write_text(json.dumps(body))
    return path


# ------------------------------------------------------------------------------ the reference server


def reference_app() -> Any:
    """The SDK's reference server: default request handler, in-memory task store, an agent answering at once."""
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    class AnswerAtOnce(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.message is not None
            task = context.current_task or new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            answer = updater.new_agent_message([new_text_part(ANSWER + context.get_user_input())])
            await updater.complete(answer)

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    card = AgentCard(
        name="reference",
        description="The a2a-sdk's reference server, answering at once.",
        version="1",
        supported_interfaces=[AgentInterface(url="/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="answers at once", tags=["bench"])],
    )
    handler = DefaultRequestHandler(agent_executor=AnswerAtOnce(), task_store=InMemoryTaskStore(), agent_card=card)

    async def health(_: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/"), Route("/health", health)]
    return Starlette(routes=routes)


def serve_reference(port: int) -> None:
    import uvicorn

    from aitp.config import Settings
    from aitp.server.serving import uvicorn_options

    uvicorn.run(reference_app(), **uvicorn_options(Settings(port=port), envelope))


def start_reference(log: Path) -> ServerProcess:
    # started as `aitp serve` is (`bench/a2a_send.py --reference serve --port N`), answering /health when ready
    try:
        return testing.start_server("unused://", log, command=[sys.executable, __file__, "--reference"])
    except RuntimeError as exc:
        raise BenchError(f"stage 'start the reference server': {exc}") from None


# ------------------------------------------------------------------------------ the aitp agent


async def run_agent(base_url: str, key: str) -> None:
    """An AITP agent on its inbox WebSocket, answering every other actor's text message at once with a post
    on the same socket (the live protocol: `aitp.bindings.openai_threads.live`), written without waiting
    for the post's reply; refusals are printed to its log.

    Lighter than the client's `Agent` with `Incoming.reply` (an httpx POST with an Idempotency-Key per
    reply): on the server, no second HTTP request per SendMessage and no idempotency record (two more
    durable writes); in the agent, httpx was 90% of its CPU. The reply is the same durable message."""
    import orjson
    from websockets.asyncio.client import connect

    from aitp.client import AitpClient
    from aitp.client._stream import ws_url

    async with AitpClient(base_url=base_url, api_key=key) as client:
        me = await client.me()
    url = f"{ws_url(client.base_url, '/actors/me/events/ws')}?after={me.inbox_cursor}"
    async with connect(url, additional_headers={"Authorization": f"Bearer {key}"}, max_size=None) as socket:
        sent = 0
        async for raw in socket:
            frame = orjson.loads(raw)
            if frame.get("op") == "error":
                print(f"refused: {frame}", flush=True)
            if frame.get("type") != "thread.message.created" or frame["data"]["metadata"].get("actor") == me.id:
                continue
            text = "".join(p["text"]["value"] for p in frame["data"]["content"] if p.get("type") == "text")
            sent += 1
            post = {"op": "post", "ref": sent, "thread_id": frame["thread_id"], "message": {"content": ANSWER + text}}
            await socket.send(orjson.dumps(post).decode())


def start_agent(server: ServerProcess, key: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        command = [sys.executable, __file__, "--agent", server.base_url, key]
        return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)


def aitp_ready(server: ServerProcess, caller: str, body: Path, agent_log: Path) -> None:
    """One SendMessage answered by the agent (its inbox stream is open)."""
    headers = {"Authorization": f"Bearer {caller}", "A2A-Version": "1.0", "Content-Type": "application/json"}
    answer: Any = None
    for attempt in range(3):  # each a new message: one sent again would answer the first one's task
        request = json.loads(body.read_text().replace("__SEQ__", f"ready-{attempt}"))
        answer = httpx.post(f"{server.base_url}/a2a/shop", json=request, headers=headers, timeout=15).json()
        if answer.get("result", {}).get("task", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED":
            return
    tail = agent_log.read_text(errors="replace")[-1500:]
    raise BenchError(f"the aitp agent did not answer a SendMessage: {answer}\n--- agent log ---\n{tail}")


# ------------------------------------------------------------------------------ measuring


def measure_one(
    server: ServerProcess, url: str, token: str, agent: int | None, body: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """One wrk run against `server`, with its CPU (and the aitp agent's, pid `agent`) per request."""
    pid = server.process.pid
    cpu, agent_cpu = cpu_seconds(pid), cpu_seconds(agent) if agent else 0.0
    figures = run_wrk(
        url, body, token, duration=args.duration, connections=args.connections, threads=1, headers=HEADERS
    )
    requests = max(1, figures["requests"])
    figures["server_cpu_us_per_request"] = (cpu_seconds(pid) - cpu) / requests * 1e6
    if agent:
        figures["agent_cpu_us_per_request"] = (cpu_seconds(agent) - agent_cpu) / requests * 1e6
    return figures


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="aitp-a2a-") as tmp_name:
        tmp = Path(tmp_name)
        body = request_body(tmp)
        env = {"AITP_A2A_WAIT_SECONDS": "10"}
        with (
            running(start_reference(tmp / "reference.log")) as reference,
            running(start_aitp(f"sqlite:///{tmp / 'a2a.db'}", tmp / "aitp.log", env=env)) as server,
        ):
            with admin_client(server) as admin:
                shop, caller = create_key(admin, "shop"), create_key(admin, "customer")
                settings = admin.put(f"{server.base_url}/a2a/shop/settings", json={"serve": True})
                if settings.status_code != 200:
                    raise BenchError(f"PUT /a2a/shop/settings answered {settings.status_code}: {settings.text}")
            agent = start_agent(server, shop, tmp / "agent.log")
            try:
                aitp_ready(server, caller, body, tmp / "agent.log")
                targets = {
                    "reference": (reference, reference.base_url + "/", "", None),
                    "aitp": (server, f"{server.base_url}/a2a/shop", caller, agent.pid),
                }
                for _, url, token, _ in targets.values():  # warm-up: connections, caches
                    run_wrk(url, body, token, duration=1, connections=args.connections, threads=1, headers=HEADERS)
                rounds = [{n: measure_one(*t, body, args) for n, t in targets.items()} for _ in range(args.rounds)]
                profiles = {}
                if args.profile:  # where each server spends its CPU, during one more run each
                    for name, target in targets.items():
                        with contextlib.ExitStack() as samplers:
                            pids = {name: target[0].process.pid, **({f"{name}-agent": target[3]} if target[3] else {})}
                            sampled = {
                                n: samplers.enter_context(Sampler(pid, RESULTS / f"a2a-profile-{n}.txt", args.duration))
                                for n, pid in pids.items()
                            }
                            measure_one(*target, body, args)
                        profiles.update({n: s.summary for n, s in sampled.items()})
                return {"rounds": rounds, "profiles": profiles}
            finally:
                agent.terminate()
                agent.wait(timeout=10)


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    servers = ingest.summarise(rounds)["workloads"]  # per server: medians of req/s, latency, CPU
    servers["aitp"]["agent_cpu_us_per_request"] = statistics.median(
        r["aitp"]["agent_cpu_us_per_request"] for r in rounds
    )
    per_round = [r["aitp"]["rps"] / r["reference"]["rps"] for r in rounds]
    ratio = statistics.median(per_round)
    cpu = "server_cpu_us_per_request"
    cpu_per_round = [r["aitp"][cpu] / r["reference"][cpu] for r in rounds]
    cpu_ratio = statistics.median(cpu_per_round)
    return {
        "servers": servers,
        "ratio": {
            "value": ratio,
            "per_round": [round(x, 3) for x in per_round],
            "target": TARGET,
            "met": ratio >= TARGET,
        },
        "cpu_ratio": {
            "value": cpu_ratio,
            "per_round": [round(x, 3) for x in cpu_per_round],
            "aim": CPU_AIM,
            "met": cpu_ratio <= CPU_AIM,
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--profile", action="store_true", help="also sample each server with py-spy")
    parser.add_argument("--out", type=Path, default=RESULTS / "a2a_send.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "parameters": {"rounds": args.rounds, "duration_s": args.duration, "connections": args.connections},
        "machine": machine_info(),
    }
    measured = measure(args)
    result.update(summarise(measured["rounds"]), profiles=measured["profiles"])
    result["total_s"] = time.perf_counter() - started
    print(f"A2A SendMessage, wrk -t1 -c{args.connections} x {args.rounds} rounds; load {result['machine']['loadavg']}")
    for name, s in result["servers"].items():
        agent = f", agent {s['agent_cpu_us_per_request']:.0f} µs" if "agent_cpu_us_per_request" in s else ""
        print(
            f"  {name:10}{s['rps']:8.0f} req/s  p50 {s['latency_p50_ms']:6.2f} ms  p99 {s['latency_p99_ms']:6.2f} ms"
            f"  server CPU {s['server_cpu_us_per_request']:.0f} µs/request{agent}"
        )
    ratio = result["ratio"]
    verdict = "met" if ratio["met"] else "MISSED"
    print(f"  ratio aitp/reference: {ratio['value']:.2f} (target >= {TARGET:g}: {verdict}) rounds {ratio['per_round']}")
    cpu = result["cpu_ratio"]
    verdict = "met" if cpu["met"] else "MISSED"
    print(
        f"  server CPU per SendMessage, aitp/reference: {cpu['value']:.2f} (aim <= {CPU_AIM:g}: {verdict})"
        f" rounds {cpu['per_round']}"
    )
    for name, profile in result["profiles"].items():
        print_profile(f"profile {name}", profile)
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--reference"]:  # `--reference serve --port N`: the reference server
        serve_reference(int(sys.argv[sys.argv.index("--port") + 1]))
    elif sys.argv[1:2] == ["--agent"]:  # `--agent BASE_URL KEY`: the aitp agent
        asyncio.run(run_agent(sys.argv[2], sys.argv[3]))
    else:
        run_main(main, "a2a_send")

"""Sign-in without an admin (`POST /v1/auth/challenge`, then `POST /v1/auth/token`) against a real `aitp serve`
(embedded SQLite), and what a key got that way costs a request afterwards.

1. Sign-ins: `--concurrency` asyncio clients (httpx, one connection each) sign in for `--duration` seconds,
   round-robin over `--accounts` distinct actors, each sign-in with a fresh challenge, signing in the loop as a
   real client does (nothing pre-computed):
   - `near`: NEAR implicit accounts (the id is the account's ed25519 public key: verified offline, NEP-413);
   - `domain`: agents of one host (`localhost:<port>/agent-<i>`), signing a JWS with the host's key, which a
     key site on loopback publishes at `/.well-known/aitp.json` (admitted by AITP_IDENTITY_ALLOW, max-age=300):
     the server fetched it once before, so these are the cached steady state.
   One server per SQLite durability mode (`--synchronous full,normal`, as bench/ingest.py): `near`, `domain`
   on the default (synchronous=FULL: every commit fsyncs), `near_normal`, `domain_normal` on `?synchronous=
   normal`; every round runs the four in turn. Figures: sign-ins/s, p50/p99 of a whole sign-in (both
   requests), server CPU µs per sign-in, and the client's CPU per sign-in (and its share of one core) and the
   time it spent signing (µs per sign-in, share of its wall time): a client near 100% of a core would bound
   the rate, not the server. Ratios per round, then the median: domain / near, NORMAL / FULL.
   Before the load, one at a time on the FULL server: the first sign-in of an agent of each of `--cold` hosts
   never seen (the server fetches the host's document) against 3 more agents of the same host (document
   cached), and the first sign-in of as many new NEAR accounts (the identity is created) against 3 more of each;
   printed: the median over hosts (accounts) of the first and of the median of the others.
2. Posting: a text message POSTed under wrk into one thread by an actor whose key an admin made (POST /v1/keys)
   and by a NEAR implicit account whose key came from /v1/auth/token, on a server of its own (FULL),
   interleaved over `--rounds` rounds (which goes first alternates): req/s, p50/p99, server CPU µs per
   request; the ratio signed-in / admin-made req/s per round and its median (target: within 0.05 of 1.00,
   printed, not asserted), and the ratio of their CPU per request.

Run: python bench/sign_in.py [--concurrency 8] [--duration 4] [--rounds 3] [--accounts 200] [--cold 10]
     [--synchronous full,normal] [--connections 16] [--profile]
`--duration` is each sign-in run's and each wrk run's. `--profile` also samples the FULL server with py-spy
during one more sign-in run of each kind (only threads holding the GIL: where Python spends CPU, not the
fsyncs) and prints where the time goes (the collapsed stacks land in bench/results/sign_in-profile-*.txt).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS,
    BenchError,
    Sampler,
    admin_client,
    cpu_seconds,
    create_key,
    load_average,
    machine_info,
    print_profile,
    run_main,
    running,
    start_aitp,
    write_result,
)
from ingest import Target, bodies, wrk_arguments, wrk_path

from aitp.client import PrivateKey, sign_in_proof
from aitp.identity import KeyPair, document_for, generate_keypair, implicit_account_of, near_keypair
from aitp.testing import ServerProcess

KINDS = ("near", "domain")
# the sign-in servers, by the SQLite store's synchronous mode (bench/ingest.py): the store URL's query
SYNCHRONOUS = {"full": "", "normal": "?synchronous=normal"}
AGAIN = 3  # sign-ins after the first, one at a time: another agent of the host, the same NEAR account
TOLERANCE = 0.05  # signed-in / admin-made requests/s within this of 1.00
# sign-in attempts unlimited (one address signs in thousands of times), anyone may add a new actor to a thread
SERVER_ENV = {
    "AITP_SIGN_IN_ATTEMPTS_PER_MINUTE": "0",
    "AITP_SIGN_IN_ADDRESS_ATTEMPTS_PER_MINUTE": "0",
    "AITP_NEW_THREADS_PER_HOUR": "0",
    "AITP_CONTACT_POLICY": "anyone",
}


# ------------------------------------------------------------------------------ who signs in


class KeySite:
    """A host on loopback publishing `/.well-known/aitp.json` with its keys (max-age=300); `gets` counts the
    requests it answered, so the run shows how often the server fetched."""

    def __init__(self, pair: KeyPair) -> None:
        body = json.dumps(document_for([pair.public_jwk])).encode()
        self.gets = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                site.gets += 1
                if self.path != "/.well-known/aitp.json":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("cache-control", "max-age=300")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.pair = pair
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"localhost:{self.server.server_address[1]}"
        self.allow = f"http://{self.host}/"  # AITP_IDENTITY_ALLOW: loopback, over plain http
        threading.Thread(target=self.server.serve_forever, name=f"key-site-{self.host}", daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def key_sites(count: int) -> Iterator[list[KeySite]]:
    sites: list[KeySite] = []
    try:
        for _ in range(count):
            sites.append(KeySite(generate_keypair()))
        yield sites
    finally:
        for site in sites:
            site.close()


@dataclass(frozen=True)
class Signer:
    """An actor and how it answers a challenge (what a real client computes once it has the challenge)."""

    actor: str
    prove: Callable[[dict[str, Any]], Any]


def prove_with(private_key: PrivateKey, challenge: dict[str, Any]) -> Any:
    """The proof for `challenge`, as the Python client makes it (signing is part of what a sign-in costs)."""
    return sign_in_proof(challenge, private_key)


def near_signer() -> Signer:
    private, public = near_keypair()

    return Signer(implicit_account_of(public), functools.partial(prove_with, private))


def domain_signer(site: KeySite, agent: str) -> Signer:
    return Signer(f"{site.host}/{agent}", functools.partial(prove_with, site.pair))


# ------------------------------------------------------------------------------ signing in


class Tally:
    """What the clients of one run saw."""

    def __init__(self) -> None:
        self.latencies: list[float] = []  # seconds, a whole sign-in (challenge, signing, token)
        self.signing = 0.0  # seconds spent computing proofs


async def sign_in_once(client: httpx.AsyncClient, signer: Signer, tally: Tally) -> str:
    """One whole sign-in of `signer`; its key. BenchError on any refusal (a limit left on, a bad proof)."""
    started = time.perf_counter()
    asked = await client.post("/auth/challenge", json={"actor": signer.actor})
    if asked.status_code != 200:
        raise BenchError(f"POST /auth/challenge ({signer.actor}) answered {asked.status_code}: {asked.text[:300]}")
    challenge = asked.json()
    signing = time.perf_counter()
    proof = signer.prove(challenge)
    tally.signing += time.perf_counter() - signing
    body = {"actor": signer.actor, "nonce": challenge["nonce"], "proof": proof}
    answered = await client.post("/auth/token", json=body)
    if answered.status_code != 200:
        raise BenchError(f"POST /auth/token ({signer.actor}) answered {answered.status_code}: {answered.text[:300]}")
    tally.latencies.append(time.perf_counter() - started)
    return str(answered.json()["key"])


async def sign_in_load(base_url: str, signers: list[Signer], concurrency: int, seconds: float) -> dict[str, Any]:
    """`concurrency` clients signing in for `seconds`, round-robin over `signers`: the run's figures."""
    turn = itertools.cycle(signers)
    tally = Tally()
    clients = [httpx.AsyncClient(base_url=base_url + "/v1", timeout=30) for _ in range(concurrency)]

    async def client_loop(client: httpx.AsyncClient, deadline: float) -> None:
        while time.perf_counter() < deadline:
            await sign_in_once(client, next(turn), tally)

    try:
        for client in clients:  # connected before the clock starts
            (await client.get(base_url + "/health")).raise_for_status()
        cpu, started = time.process_time(), time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(*(client_loop(client, deadline) for client in clients))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    count = len(tally.latencies)
    return {
        "sign_ins": count,
        "seconds": wall,
        "rate": count / wall,
        "latency_ms": percentiles(tally.latencies),
        "client_cpu_us_per_sign_in": cpu / max(1, count) * 1e6,
        "client_cpu_share": cpu / wall,  # of one core
        "signing_us_per_sign_in": tally.signing / max(1, count) * 1e6,
        "signing_share": tally.signing / wall,  # of the client's wall time (one event loop: its busy time)
    }


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    if not ordered:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000

    return {"p50": at(0.50), "p99": at(0.99), "max": ordered[-1] * 1000}


def measured_load(server: ServerProcess, signers: list[Signer], args: argparse.Namespace) -> dict[str, Any]:
    """One sign-in run, with the server's CPU per sign-in and the load average."""
    pid = server.process.pid
    cpu = cpu_seconds(pid)
    figures = asyncio.run(sign_in_load(server.base_url, signers, args.concurrency, args.duration))
    figures["server_cpu_us_per_sign_in"] = (cpu_seconds(pid) - cpu) / max(1, figures["sign_ins"]) * 1e6
    figures["loadavg_1m"] = load_average()[0]
    return figures


def one_at_a_time(server: ServerProcess, groups: list[list[Signer]]) -> list[tuple[float, float]]:
    """Each group's sign-ins in turn, one request at a time: per group, the first's ms and the median of the
    others' (AGAIN of them: a residue of the first, such as a collection of what it allocated, hits one only)."""

    async def run() -> list[tuple[float, float]]:
        timings = []
        async with httpx.AsyncClient(base_url=server.base_url + "/v1", timeout=30) as client:
            (await client.get(server.base_url + "/health")).raise_for_status()
            for group in groups:
                tally = Tally()
                for signer in group:
                    await sign_in_once(client, signer, tally)
                timings.append((tally.latencies[0] * 1000, statistics.median(tally.latencies[1:]) * 1000))
        return timings

    return asyncio.run(run())


def workload_name(kind: str, mode: str) -> str:
    """`near`, `domain` on the default store (synchronous=FULL); `near_normal`... on the others."""
    return kind if mode == "full" else f"{kind}_{mode}"


def measure_sign_ins(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    # site 0: the steady state's host (and the process's warm-up); sites 1..cold: a first fetch each
    with key_sites(1 + args.cold) as sites, contextlib.ExitStack() as running_servers:
        env = {**SERVER_ENV, "AITP_IDENTITY_ALLOW": ",".join(site.allow for site in sites)}
        servers = {}
        for mode in args.synchronous:  # each on its own file
            url = f"sqlite:///{tmp / f'sign_in-{mode}.db'}{SYNCHRONOUS[mode]}"
            servers[mode] = running_servers.enter_context(running(start_aitp(url, tmp / f"{mode}.log", env=env)))
        signers = {
            "near": [near_signer() for _ in range(args.accounts)],
            "domain": [domain_signer(sites[0], f"agent-{i}") for i in range(args.accounts)],
        }
        for server in servers.values():  # each process warmed up (imports, the fetch code path): one of each
            one_at_a_time(server, [[signers["near"][0], signers["domain"][0]]])
        primary = servers[args.synchronous[0]]  # the cold and profiled sign-ins
        cold = one_at_a_time(
            primary, [[domain_signer(site, f"agent-{i}") for i in range(1 + AGAIN)] for site in sites[1:]]
        )
        fresh = [near_signer() for _ in range(args.cold)]
        near_first = one_at_a_time(primary, [[signer] * (1 + AGAIN) for signer in fresh])
        workloads = {workload_name(k, mode): (server, k) for mode, server in servers.items() for k in KINDS}
        for server, kind in workloads.values():  # warm-up: connections, the first pass of new identities
            asyncio.run(sign_in_load(server.base_url, signers[kind], args.concurrency, 1.0))
        fetches_before = sites[0].gets
        rounds = [
            {name: measured_load(server, signers[kind], args) for name, (server, kind) in workloads.items()}
            for _ in range(args.rounds)
        ]
        fetches_during = sites[0].gets - fetches_before
        profiles = {}
        if args.profile:
            for kind in KINDS:
                out = RESULTS / f"sign_in-profile-{kind}.txt"
                with Sampler(primary.process.pid, out) as sampler:
                    time.sleep(0.5)
                    asyncio.run(sign_in_load(primary.base_url, signers[kind], args.concurrency, args.duration))
                profiles[kind] = sampler.summary
    return {
        "rounds": rounds,
        "idle": {
            "domain_first_ms": [round(first, 2) for first, _ in cold],
            "domain_cached_ms": [round(second, 2) for _, second in cold],
            "near_first_ms": [round(first, 2) for first, _ in near_first],
            "near_again_ms": [round(second, 2) for _, second in near_first],
        },
        "document_fetches": {"cold_hosts": sum(site.gets for site in sites[1:]), "steady_state": fetches_during},
        "profiles": profiles,
    }


# ------------------------------------------------------------------------------ posting with the keys


def measure_posting(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """POST text under wrk into one thread with an admin-made key and with a signed-in one, interleaved."""
    body = bodies(tmp)["text"]
    with running(start_aitp(f"sqlite:///{tmp / 'posting.db'}", tmp / "posting.log", env=SERVER_ENV)) as server:
        with admin_client(server) as admin:
            shop, user = create_key(admin, "shop"), create_key(admin, "user")
        near = near_signer()
        signed = one_key(server, near)
        with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {user}"}) as client:
            created = client.post("/threads", json={"actors": [{"id": "shop"}, {"id": near.actor}]})
            if created.status_code != 200:
                raise BenchError(f"POST /threads answered {created.status_code}: {created.text[:300]}")
        url = f"{server.base_url}/v1/threads/{created.json()['id']}/messages"
        targets = {"admin": Target(server, {"text": url}, shop), "signed": Target(server, {"text": url}, signed)}
        for target in targets.values():  # warm-up: connections, each key's first look-up, the page cache
            target.measure("text", body, argparse.Namespace(**{**vars(args), "duration": 1}))
        rounds = []
        for index in range(args.rounds):
            order = ("admin", "signed") if index % 2 == 0 else ("signed", "admin")
            measured = {name: targets[name].measure("text", body, args) for name in order}
            rounds.append({name: {**measured[name], "loadavg_1m": load_average()[0]} for name in ("admin", "signed")})
    return {"rounds": rounds, "near_actor": near.actor}


def one_key(server: ServerProcess, signer: Signer) -> str:
    async def run() -> str:
        async with httpx.AsyncClient(base_url=server.base_url + "/v1", timeout=30) as client:
            return await sign_in_once(client, signer, Tally())

    return asyncio.run(run())


# ------------------------------------------------------------------------------ figures


def summarise_sign_ins(measured: dict[str, Any]) -> dict[str, Any]:
    rounds = measured["rounds"]
    workloads = {}
    for name in rounds[0]:
        runs = [r[name] for r in rounds]

        def median(pick: Callable[[dict[str, Any]], float], runs: list[dict[str, Any]] = runs) -> float:
            return statistics.median(pick(x) for x in runs)

        workloads[name] = {
            "rate": median(lambda x: x["rate"]),
            "rate_per_round": [round(x["rate"], 1) for x in runs],
            "latency_p50_ms": median(lambda x: x["latency_ms"]["p50"]),
            "latency_p99_ms": median(lambda x: x["latency_ms"]["p99"]),
            "server_cpu_us_per_sign_in": median(lambda x: x["server_cpu_us_per_sign_in"]),
            "client_cpu_us_per_sign_in": median(lambda x: x["client_cpu_us_per_sign_in"]),
            "client_cpu_share": median(lambda x: x["client_cpu_share"]),
            "signing_us_per_sign_in": median(lambda x: x["signing_us_per_sign_in"]),
            "signing_share": median(lambda x: x["signing_share"]),
            "sign_ins": sum(x["sign_ins"] for x in runs),
        }
    ratios = {}  # per round, then the median
    pairs = [("domain/near", "domain", "near")]
    pairs += [(f"{k} normal/full", workload_name(k, "normal"), k) for k in KINDS]
    for label, over, under in pairs:
        if over in rounds[0] and under in rounds[0]:
            per_round = [r[over]["rate"] / r[under]["rate"] for r in rounds]
            ratios[label] = {"ratio": statistics.median(per_round), "per_round": [round(x, 3) for x in per_round]}
    idle = {name: statistics.median(values) for name, values in measured["idle"].items() if values}
    return {
        "workloads": workloads,
        "ratios": ratios,
        "idle_ms": idle,
        "idle_ms_samples": measured["idle"],
        "document_fetches": measured["document_fetches"],
    }


def summarise_posting(measured: dict[str, Any]) -> dict[str, Any]:
    rounds = measured["rounds"]
    keys = {
        name: {
            "rps": statistics.median(r[name]["rps"] for r in rounds),
            "rps_per_round": [round(r[name]["rps"], 1) for r in rounds],
            "latency_p50_ms": statistics.median(r[name]["latency_us"]["p50"] for r in rounds) / 1000,
            "latency_p99_ms": statistics.median(r[name]["latency_us"]["p99"] for r in rounds) / 1000,
            "server_cpu_us_per_request": statistics.median(r[name]["server_cpu_us_per_request"] for r in rounds),
            "requests": sum(r[name]["requests"] for r in rounds),
        }
        for name in ("admin", "signed")
    }
    per_round = [r["signed"]["rps"] / r["admin"]["rps"] for r in rounds]
    cpu_per_round = [r["signed"]["server_cpu_us_per_request"] / r["admin"]["server_cpu_us_per_request"] for r in rounds]
    ratio = statistics.median(per_round)
    return {
        "keys": keys,
        "ratio_signed_over_admin": ratio,
        "ratio_per_round": [round(x, 3) for x in per_round],
        "cpu_ratio_signed_over_admin": statistics.median(cpu_per_round),
        "target": f"within {TOLERANCE} of 1.00",
        "met": abs(ratio - 1.0) <= TOLERANCE,
    }


def print_table(result: dict[str, Any]) -> None:
    p, s, post = result["parameters"], result["sign_in"], result["posting"]
    print(
        f"sign-in: {p['concurrency']} asyncio clients x {p['duration_s']}s x {p['rounds']} rounds, "
        f"{p['accounts']} actors round-robin; aitp serve on SQLite; load {result['machine']['loadavg']}"
    )
    print(
        f"  {'workload':14}{'sign-ins/s':>11}{'p50 ms':>8}{'p99 ms':>8}{'server CPU µs':>15}"
        f"{'client CPU µs':>15}{'client CPU':>12}{'signing µs':>12}{'signing':>9}"
    )
    for name, k in s["workloads"].items():
        print(
            f"  {name:14}{k['rate']:11.0f}{k['latency_p50_ms']:8.1f}{k['latency_p99_ms']:8.1f}"
            f"{k['server_cpu_us_per_sign_in']:15.0f}{k['client_cpu_us_per_sign_in']:15.0f}"
            f"{k['client_cpu_share']:12.0%}{k['signing_us_per_sign_in']:12.0f}{k['signing_share']:9.1%}"
        )
    for label, r in s["ratios"].items():
        print(f"  ratio sign-ins/s {label:18} {r['ratio']:.2f} rounds {r['per_round']}")
    idle, fetches = s["idle_ms"], s["document_fetches"]
    if idle:
        print(
            f"  one at a time, idle server (median of {p['cold']}): domain first of its host "
            f"{idle['domain_first_ms']:.1f} ms (document fetched) vs cached {idle['domain_cached_ms']:.1f} ms; "
            f"NEAR first {idle['near_first_ms']:.1f} ms vs again {idle['near_again_ms']:.1f} ms"
        )
    print(
        f"  key document fetches: {fetches['cold_hosts']} for {p['cold']} new hosts, "
        f"{fetches['steady_state']} during the steady state"
    )
    print(
        f"posting: wrk -t{p['threads']} -c{p['connections']} -d{p['duration_s']}s x {p['rounds']} rounds, "
        "a text message into one thread"
    )
    print(f"  {'key':22}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'server CPU µs/req':>19}")
    for name, label in (("admin", "admin-made (/v1/keys)"), ("signed", "signed-in (NEAR)")):
        k = post["keys"][name]
        print(
            f"  {label:22}{k['rps']:10.0f}{k['latency_p50_ms']:9.2f}{k['latency_p99_ms']:9.2f}"
            f"{k['server_cpu_us_per_request']:19.0f}"
        )
    verdict = "met" if post["met"] else "MISSED"
    print(
        f"  ratio signed/admin req/s: {post['ratio_signed_over_admin']:.2f} (target {post['target']}: {verdict}) "
        f"rounds {post['ratio_per_round']}"
    )
    print(f"  server CPU per request, signed over admin: x{post['cpu_ratio_signed_over_admin']:.2f}")
    for kind, prof in result.get("profiles", {}).items():
        print_profile(f"profile sign-in {kind}", prof)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    wrk_arguments(parser, duration=4.0, connections=16)  # --duration: each sign-in run and each wrk run
    parser.add_argument("--concurrency", type=int, default=8, help="asyncio clients signing in at once")
    parser.add_argument("--accounts", type=int, default=200, help="distinct actors of each kind, round-robin")
    parser.add_argument("--cold", type=int, default=10, help="new hosts (and NEAR accounts) timed one at a time")
    parser.add_argument(
        "--synchronous",
        type=lambda v: v.split(","),
        default=list(SYNCHRONOUS),
        help="comma-separated SQLite modes of the sign-in servers, one each: full (the default), normal",
    )
    parser.add_argument("--profile", action="store_true", help="also sample the server with py-spy")
    parser.add_argument("--out", type=Path, default=RESULTS / "sign_in.json")
    args = parser.parse_args(argv)
    if not args.synchronous or set(args.synchronous) - set(SYNCHRONOUS):
        parser.error(f"--synchronous takes {','.join(SYNCHRONOUS)}")
    wrk_path()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aitp-sign-in-") as tmp_name:
        tmp = Path(tmp_name)
        sign_ins = measure_sign_ins(args, tmp)
        posting = measure_posting(args, tmp)
    result = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "parameters": {
            "concurrency": args.concurrency,
            "duration_s": args.duration,
            "rounds": args.rounds,
            "accounts": args.accounts,
            "cold": args.cold,
            "connections": args.connections,
            "threads": args.threads,
            "store": "sqlite",
            "synchronous": args.synchronous,
        },
        "machine": machine_info(),
        "sign_in": summarise_sign_ins(sign_ins),
        "posting": summarise_posting(posting),
        "profiles": sign_ins["profiles"],
        "total_s": time.perf_counter() - started,
    }
    print_table(result)
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "sign_in")

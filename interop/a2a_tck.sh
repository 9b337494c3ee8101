#!/usr/bin/env bash
# The A2A TCK against an AITP agent served through the A2A face (issue 16). Not part of the README's test
# command: a fresh clone has no TCK. Usage: interop/a2a_tck.sh [categories...] (default: mandatory capabilities)
#   A2A_TCK_DIR   the TCK checkout (default: ../shared/reference/a2a-tck, commit 410ba92)
#   TCK_VENV      a virtualenv for the TCK's own dependencies (created with `pip install -e $A2A_TCK_DIR`)
# It starts `aitp serve` on a fresh store (SendMessage waits 1 s for an answer: see interop/tck_agent.py; any
# actor may contact any other: the TCK's client is a plain key, not a verified actor), makes the agent
# `tck-agent` reachable over A2A (its card also at the host's /.well-known/agent-card.json, where the TCK
# looks), runs interop/tck_agent.py as that agent,
# and runs run_tck.py as the actor `tck-client`. The TCK at 410ba92 calls the A2A 1.0 methods (SendMessage,
# ...) without the A2A-Version header, which the a2a-sdk then reads as 0.3 and refuses (-32009): the
# header is sent with the key through the TCK's A2A_AUTH_HEADERS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
TCK=${A2A_TCK_DIR:-$ROOT/../shared/reference/a2a-tck}
VENV=${TCK_VENV:-$ROOT/.tck-venv}
CATEGORIES=("${@:-mandatory capabilities}")
read -r -a CATEGORIES <<<"${CATEGORIES[*]}"
RESULTS=${TCK_RESULTS:-${TMPDIR:-/tmp}/aitp-a2a-tck}  # each category's full log is kept there
export TCK_STREAMING_TIMEOUT=${TCK_STREAMING_TIMEOUT:-2.0}

[ -d "$TCK" ] || { echo "no TCK at $TCK (set A2A_TCK_DIR)" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q -e "$TCK"
fi

WORK=$(mktemp -d)
PORT=$("$PY" -c 'from aitp.testing import free_port; print(free_port())')
BASE=http://localhost:$PORT  # the TCK flags 127.0.0.1 in a card's URLs as "internal", not localhost
ADMIN=aitp_tck_admin_$RANDOM$RANDOM
cleanup() { kill "${AGENT_PID:-}" "${SERVER_PID:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

AITP_ADMIN_KEY=$ADMIN AITP_A2A_ROOT_AGENT=tck-agent AITP_RATE_LIMIT=0 AITP_A2A_WAIT_SECONDS=1 AITP_CONTACT_POLICY=anyone \
  "$PY" -m aitp serve --store "sqlite:///$WORK/tck.db" --port "$PORT" >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "$BASE/health" >/dev/null && break; sleep 0.1; done

key() { curl -sf -X POST "$BASE/v1/keys" -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' \
  -d "{\"actor\": \"$1\"}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["key"])'; }
AGENT_KEY=$(key tck-agent)
CLIENT_KEY=$(key tck-client)
curl -sf -X PUT "$BASE/a2a/tck-agent/settings" -H "Authorization: Bearer $AGENT_KEY" \
  -H 'content-type: application/json' -d '{"serve": true}' >/dev/null
"$PY" interop/tck_agent.py "$BASE" "$AGENT_KEY" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
sleep 1

export A2A_AUTH_HEADERS="{\"Authorization\": \"Bearer $CLIENT_KEY\", \"A2A-Version\": \"1.0\"}"
STATUS=0
for category in "${CATEGORIES[@]}"; do
  echo "=== A2A TCK: $category ==="
  (cd "$TCK" && "$VENV/bin/python" run_tck.py --sut-url "$BASE/a2a/tck-agent" --category "$category") \
    >"$WORK/tck-$category.log" 2>&1 || STATUS=1
  grep -E "passed|failed|PASSED|FAILED|ERROR|error" "$WORK/tck-$category.log" | grep -vE "^(tests/|E )" | tail -25
  mkdir -p "$RESULTS" && cp "$WORK/tck-$category.log" "$RESULTS/"
done
exit $STATUS

"""The AITP agent the A2A TCK talks to through the A2A face (interop/a2a_tck.sh): it answers every text
message at once, except as the TCK's SUT requirements ask (docs/SUT_REQUIREMENTS.md): a message whose A2A
messageId starts with `test-resubscribe-message-id` is answered after 2 x TCK_STREAMING_TIMEOUT seconds, so
its task stays open for `tasks/resubscribe`.

    python interop/tck_agent.py http://127.0.0.1:8000 <the agent's key>
"""

from __future__ import annotations

import asyncio
import os
import sys

from aitp.client import Agent, AitpClient, Incoming

SLOW_PREFIX = "test-resubscribe-message-id"


async def main(base_url: str, key: str) -> None:
    delay = 2 * float(os.environ.get("TCK_STREAMING_TIMEOUT") or 2.0) + 1.0
    async with AitpClient(base_url=base_url, api_key=key) as client:
        agent = Agent(client)

        @agent.on_text
        async def answer(incoming: Incoming) -> None:
            message_id = incoming.message.metadata.get("a2a_message_id", "")
            if message_id.startswith(SLOW_PREFIX):
                asyncio.get_running_loop().call_later(
                    delay, lambda: asyncio.ensure_future(incoming.reply(f"Hello World! (after {delay:g} s)"))
                )
                return
            await incoming.reply(f"Hello World! You said: {incoming.text!r}")

        await agent.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

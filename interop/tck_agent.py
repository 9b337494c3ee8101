"""The AITP agent the A2A TCK talks to through the A2A face (interop/a2a_tck.sh).

It answers every text message after `2 x TCK_STREAMING_TIMEOUT + 1` seconds, so each task stays open
(`working`) that long. The SUT requirements (docs/SUT_REQUIREMENTS.md) ask it for messages whose messageId
starts with `test-resubscribe-message-id` (resubscribing needs a task still running), and the TCK at
410ba92 needs it for most others too: its tasks/list tests wait for each task they create to be seen
`working` by tasks/get, its cancel test cancels the task it just sent, and its history and continuation
tests send more messages into the task (all refused once a task has completed). The script makes
SendMessage return after 1 s (`AITP_A2A_WAIT_SECONDS`), the task still working.

    python interop/tck_agent.py http://127.0.0.1:8000 <the agent's key>
"""

from __future__ import annotations

import asyncio
import os
import sys

from aitp.client import Agent, AitpClient, Incoming


async def main(base_url: str, key: str) -> None:
    delay = 2 * float(os.environ.get("TCK_STREAMING_TIMEOUT") or 2.0) + 1.0
    answers: set[asyncio.Task[None]] = set()

    async def answer_later(incoming: Incoming) -> None:
        await asyncio.sleep(delay)
        # the reply names its task: a later message of the caller in the same context starts another task
        message = incoming.message
        task = message.metadata.get("a2a_task") or f"{message.thread_id}.{message.id}"
        await incoming.reply(f"Hello World! You said: {incoming.text!r}", metadata={"a2a_task": task})

    async with AitpClient(base_url=base_url, api_key=key) as client:
        agent = Agent(client)

        @agent.on_text
        async def answer(incoming: Incoming) -> None:
            task = asyncio.create_task(answer_later(incoming))
            answers.add(task)
            task.add_done_callback(answers.discard)

        await agent.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

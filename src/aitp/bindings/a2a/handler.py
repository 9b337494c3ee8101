"""The A2A request handler of the agents served here: each A2A method translated to the task service
(`aitp.services.a2a_tasks`) and back: its params read into plain terms (`parts` for content), the tasks it
answers rendered (`tasks`), its refusals as A2A errors (`errors`).

Served by the SDK's JSON-RPC dispatcher (A2A 1.0 and, on the same endpoint, 0.3), and for SendMessage by
`send` too. Who calls and which agent is called come in the call context (`routes.Context`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from typing import Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
)
from google.protobuf.json_format import MessageToDict

from aitp.bindings.a2a import tasks as render
from aitp.bindings.a2a.errors import a2a_error
from aitp.bindings.a2a.parts import aitp_content
from aitp.errors import APIError
from aitp.services import a2a_fold, addressing
from aitp.services import a2a_tasks as task_service
from aitp.services.a2a_tasks import Call, Sent

TO = "to"  # the A2A message's metadata naming its recipients (AITP `metadata.to`)
CALL = "aitp.a2a.call"  # call-context state key
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50

T = TypeVar("T")


def _call(context: ServerCallContext) -> Call:
    call: Call = context.state[CALL]
    return call


async def _served(work: Awaitable[T], task: str | None = None) -> T:
    """The service's answer, or its refusal as the A2A error a client can act on (`task`: the one named)."""
    try:
        return await work
    except APIError as error:
        raise a2a_error(error, task=task) from None


def _invalid(message: str, param: str) -> InvalidParamsError:
    """-32602, naming the field as AITP refusals do (`data.param`)."""
    return InvalidParamsError(message=message, data={"param": param})


def check_message(message: Message) -> None:
    """A sent message has what the spec requires of it: an id and a role."""
    if not message.message_id:
        raise _invalid("message.messageId is required.", "message.messageId")
    if message.role == Role.ROLE_UNSPECIFIED:
        raise _invalid("message.role is required (ROLE_USER for a client's message).", "message.role")


def history_length(holder: Any, param: str) -> int | None:
    """The history length asked for (None: all), refused when negative."""
    if not holder.HasField("history_length"):
        return None
    if holder.history_length < 0:
        raise _invalid(f"{param} must not be negative.", param)
    return int(holder.history_length)


def sent(message: Message, requested: set[str]) -> Sent:
    """The A2A message in the service's terms: its content, and the recipients its metadata names (`to`:
    actor ids; 400 naming `message.metadata.to` for another shape), its extensions and the requested ones."""
    content = aitp_content(message)
    metadata = {}
    if message.HasField("metadata") and TO in message.metadata.fields:
        named = MessageToDict(message.metadata)[TO]
        try:
            metadata[addressing.TO] = addressing.encode_to(addressing.read_to(named, f"message.metadata.{TO}"))
        except APIError as error:
            raise a2a_error(error) from None
    return Sent(
        message_id=message.message_id,
        content=content,
        metadata=metadata,
        context_id=message.context_id,
        task_id=message.task_id,
        extensions=[*message.extensions, *requested],
    )


class AitpRequestHandler(RequestHandler):
    """A2A methods over the task service, for whichever agent the call names."""

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        view, history = await self.send(params, context)
        return render.task(view, history)

    async def send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> tuple[a2a_fold.TaskView, int | None]:
        """SendMessage's task once the agent answered (or it is interrupted, or the wait is over), and the
        history length asked for."""
        check_message(params.message)
        history = history_length(params.configuration, "configuration.historyLength")
        message = sent(params.message, context.requested_extensions)
        wait = not params.configuration.return_immediately
        return await _served(task_service.send_and_wait(_call(context), message, wait=wait)), history

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = _call(context)
        check_message(params.message)
        tasks, view = await _served(task_service.send(call, sent(params.message, context.requested_extensions)))
        yield render.task(view)
        async for changed in task_service.follow(call, tasks, view):
            yield render.update(changed)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = _call(context)
        tasks, view = await _served(task_service.subscribe(call, params.id), params.id)
        # the task as read, then every change after the last event read: nothing missed, nothing twice
        yield render.task(view)
        async for changed in task_service.follow(call, tasks, view):
            yield render.update(changed)

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        history = history_length(params, "historyLength")
        _, view = await _served(task_service.load(_call(context), params.id), params.id)
        return render.task(view, history)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        view = await _served(task_service.cancel(_call(context), params.id), params.id)
        return render.task(view)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        if params.HasField("page_size") and not 1 <= params.page_size <= MAX_PAGE_SIZE:
            raise _invalid(f"pageSize must be between 1 and {MAX_PAGE_SIZE}.", "pageSize")
        history = history_length(params, "historyLength")
        token = params.page_token or "0"
        if not token.isascii() or not token.isdigit():  # a token this server gave: a position, never negative
            raise _invalid("Invalid pageToken: give the nextPageToken of the page before.", "pageToken")
        if params.status and params.status not in TaskState.values():
            raise _invalid(f"Unknown status {params.status}.", "status")
        state = TaskState.Name(params.status) if params.status else None  # the fold's states are these names
        after = params.status_timestamp_after.seconds if params.HasField("status_timestamp_after") else None
        page = await _served(
            task_service.list_tasks(
                _call(context),
                context_id=params.context_id,
                state=state,
                updated_after=after,
                offset=int(token),
                size=params.page_size or DEFAULT_PAGE_SIZE,
            )
        )
        return ListTasksResponse(
            tasks=[render.task(view, history) for view in page.tasks],
            next_page_token="" if page.next_offset is None else str(page.next_offset),
            page_size=len(page.tasks),
            total_size=page.total,
        )

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

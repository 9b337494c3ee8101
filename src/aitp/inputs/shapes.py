"""Shapes of client input that pydantic types alone cannot express: metadata (OpenAI's rules), message
content (a string, strings or OpenAI parts, stored as OpenAI output parts) and attachments."""

from __future__ import annotations

from typing import Any

from aitp.errors import InvalidRequest

MAX_METADATA_PAIRS = 16
# a capability schema URL (`capabilities.declarations`), here beside the other input bounds so that the wire
# models, which the client carries, state it without importing the version-range machinery (`packaging`)
MAX_URL_LENGTH = 2048
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512


def check_metadata(metadata: dict[str, Any], param: str = "metadata") -> dict[str, str]:
    """OpenAI metadata rules: at most 16 pairs, keys <= 64 chars, string values <= 512 chars."""
    if len(metadata) > MAX_METADATA_PAIRS:
        raise InvalidRequest(
            f"Metadata may hold at most {MAX_METADATA_PAIRS} pairs; got {len(metadata)}.",
            param=param,
            code="too_many_metadata_pairs",
        )
    for key, value in metadata.items():
        if not key or len(key) > MAX_METADATA_KEY:
            raise InvalidRequest(
                f"Metadata keys must be 1 to {MAX_METADATA_KEY} characters.",
                param=f"{param}.{key[:64]}",
                code="string_too_long" if key else "invalid_value",
            )
        if not isinstance(value, str):
            raise InvalidRequest("Metadata values must be strings.", param=f"{param}.{key}", code="invalid_value")
        if len(value) > MAX_METADATA_VALUE:
            raise InvalidRequest(
                f"Metadata values may be at most {MAX_METADATA_VALUE} characters.",
                param=f"{param}.{key}",
                code="string_too_long",
            )
    return dict(metadata)


THREAD_DETAILS = ("auto", "low", "high")  # an image's `detail` as the Threads face shows it (ImageURL, ImageFile)
# as stored, and as the Conversations face (Responses' input_image) shows it; a Threads client may send "original"
# too (one face's parts go through the other's): it reads as "high" there
IMAGE_DETAILS = (*THREAD_DETAILS, "original")


def image_detail(value: Any, allowed: tuple[str, ...], param: str) -> str:
    """An image part's `detail` as stored: absent or null is "auto" (what OpenAI assumes); anything but the
    face's values is 400 naming the field. Stored unchecked, one member's "bogus" made every member's strictly
    validating SDK fail to read the thread."""
    if value is None:
        return "auto"
    if value not in allowed:
        raise InvalidRequest(f"`detail` must be one of {', '.join(allowed)}.", param=param, code="invalid_value")
    return str(value)


def shown_detail(value: Any, allowed: tuple[str, ...]) -> str:
    """A stored `detail` as a face shows it: "original" (the Conversations face's) is "high" where only the
    Threads values exist; a value stored before details were checked (null, anything else) is "auto"."""
    if value in allowed:
        return str(value)
    return "high" if value == "original" and "high" in allowed else "auto"


def _text_part(value: str) -> dict[str, Any]:
    return {"type": "text", "text": {"value": value, "annotations": []}}


def normalize_content(content: str | list[Any], param: str = "content") -> list[dict[str, Any]]:
    """A string, a list of strings (AITP) or OpenAI content parts → stored OpenAI output parts."""
    if isinstance(content, str):
        return [_text_part(content)]
    if not content:
        raise InvalidRequest("Message content must not be empty.", param=param)
    return [_normalize_part(item, f"{param}[{i}]") for i, item in enumerate(content)]


def _normalize_part(item: Any, param: str) -> dict[str, Any]:
    if isinstance(item, str):
        return _text_part(item)
    if not isinstance(item, dict):
        raise InvalidRequest("A content part must be a string or an object with a `type`.", param=param)
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        if isinstance(text, dict):  # the output shape, sent back as input
            text = text.get("value")
        if not isinstance(text, str):
            raise InvalidRequest("A text part needs `text` as a string.", param=f"{param}.text")
        return _text_part(text)
    if kind == "image_url":
        image = item.get("image_url")
        if not isinstance(image, dict) or not isinstance(image.get("url"), str):
            raise InvalidRequest("An image_url part needs `image_url.url` as a string.", param=f"{param}.image_url")
        detail = image_detail(image.get("detail"), IMAGE_DETAILS, f"{param}.image_url.detail")
        return {"type": "image_url", "image_url": {"url": image["url"], "detail": detail}}
    if kind == "image_file":
        image = item.get("image_file")
        if not isinstance(image, dict) or not isinstance(image.get("file_id"), str):
            raise InvalidRequest("An image_file part needs `image_file.file_id`.", param=f"{param}.image_file")
        detail = image_detail(image.get("detail"), IMAGE_DETAILS, f"{param}.image_file.detail")
        return {"type": "image_file", "image_file": {"file_id": image["file_id"], "detail": detail}}
    raise InvalidRequest(
        f"Unsupported content part type {kind!r}: use 'text', 'image_url' or 'image_file'.", param=f"{param}.type"
    )


def check_attachments(attachments: list[dict[str, Any]] | None, param: str = "attachments") -> list[dict[str, Any]]:
    if not attachments:
        return []
    for i, attachment in enumerate(attachments):
        if not isinstance(attachment.get("file_id"), str):
            raise InvalidRequest("An attachment needs `file_id` as a string.", param=f"{param}[{i}].file_id")
    return list(attachments)

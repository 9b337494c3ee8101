"""Every error is the OpenAI envelope, with the offending field in `param`."""

from __future__ import annotations

from tests.conftest import API


async def test_unknown_url_and_method_are_enveloped(api: API) -> None:
    unknown = await api.admin.get("/nothing/here")
    assert unknown.status_code == 404
    assert set(unknown.json()["error"]) == {"message", "type", "param", "code"}
    assert unknown.json()["error"]["code"] == "unknown_url"
    wrong_method = await api.admin.put("/threads")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"


async def test_malformed_json_and_wrong_types(api: API) -> None:
    bad_json = await api.admin.post("/threads", content=b"{nope", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400
    assert bad_json.json()["error"]["code"] == "invalid_json"
    wrong_type = await api.admin.post("/threads", json={"messages": "not a list"})
    assert wrong_type.status_code == 400
    assert wrong_type.json()["error"]["param"] == "messages"
    nested = await api.admin.post("/threads", json={"messages": [{"role": "robot", "content": "x"}]})
    assert nested.status_code == 400
    assert nested.json()["error"]["param"] == "messages[0].role"
    unknown_field = await api.admin.post("/threads", json={"colour": "red"})
    assert unknown_field.json()["error"] == {
        "message": "Unrecognized request argument supplied: colour.",
        "type": "invalid_request_error",
        "param": "colour",
        "code": "unknown_parameter",
    }


async def test_openai_beta_header_is_accepted(api: API) -> None:
    response = await api.admin.post("/threads", json={}, headers={"OpenAI-Beta": "assistants=v2"})
    assert response.status_code == 200

"""The web server and what couples to it: the only package that imports uvicorn.

- `serving`: how `aitp serve` runs uvicorn (options, logging, workers);
- `http_protocol`: uvicorn's httptools protocol with limits on the request head and on connections;
- `websocket_protocol`: uvicorn's WebSocket protocol sending the frames of one loop turn in one write;
- `access_log`: uvicorn's access line, redacted, for less CPU;
- `log_config`: uvicorn's logging configuration with secrets redacted.

Each of these subclasses or reads uvicorn's (or Starlette's) internals; `tests/server/test_internals.py`
pins the shape each relies on, and fails naming the module to re-check when an upgrade changes it.
"""

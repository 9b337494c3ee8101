"""Client input, checked once and in one place, before a service does any work with it.

- `strict_json`: JSON text (request bodies, WebSocket frames) parsed strictly: only values a store can
  keep and the server can send back, else 400 naming the field;
- `limits`: counts, lengths and nesting against the AITP_MAX_* settings (400 naming the limit);
- `shapes`: what pydantic types cannot say: metadata rules, content parts normalised, attachments.

Capability messages are recognised and validated where capabilities live (`aitp.capabilities.messages`),
using these limits.
"""

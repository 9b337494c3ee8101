"""The OpenAI Conversations API face over the same threads: a conversation is a thread (same id), a message
item is a message (same id). Only translation lives here: items ↔ the core's `NewMessage`, records ↔ the
Conversations objects; the rules are the services' (membership, validation, correlation, limits). The
HTTP conventions (key, error envelope, Idempotency-Key) are the OpenAI ones, shared with the Threads binding
through `aitp.bindings.http`; refusals carry this face's names (`.names`)."""

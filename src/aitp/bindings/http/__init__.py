"""What the HTTP faces (the OpenAI Threads and Conversations bindings, the A2A binding's HTTP routes) share:
the request context (key, rate, body limit), the route class and its JSON body rules, `Idempotency-Key`,
JSON responses, and the rendering of the core's refusals as the OpenAI error envelope. It imports no other
binding: the bindings share through it, never through each other."""

"""The rules, once: plain async functions over a Runtime and a Principal. Routes only call these."""

"""Live events: the hub that wakes subscribers, and the per-subscriber streams the transports drain."""

"""Deliveries: inbox events pushed out to where an agent runs (today: signed webhooks, `webhooks.py`).

A face, like a binding: it reads the event log by cursor through the core and renders events with the
rendering the composition root gives it; nothing in the core imports it.
"""

"""Capabilities: how actors declare what they understand (registry and validation build on this)."""

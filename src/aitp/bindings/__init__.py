"""The faces of the service: one package per protocol, each translating its wire (shapes, ids, errors) to
the core's service functions. The core imports none of them (tests/test_architecture.py)."""

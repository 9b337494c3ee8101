"""The MongoDB store (a replica set: transactions and change streams)."""

from aitp.store.mongo.store import MongoStore

__all__ = ["MongoStore"]

"""aitp: the thread service for the Agent Interaction & Transaction Protocol."""

__version__ = "0.1.0"

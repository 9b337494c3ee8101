"""The A2A (Agent2Agent) face: AITP actors reachable by A2A clients, one A2A agent per actor that opts in.

The `a2a-sdk` package speaks the protocol (JSON-RPC dispatch for A2A 1.0 and 0.3, types, Agent Cards);
this folder translates: A2A messages to AITP messages, the tasks `aitp.services.a2a_tasks` reads from a
thread to A2A tasks, AITP refusals to A2A errors. Outbound (A2A agents standing in threads as actors) is a
delivery, `aitp.deliveries.a2a`, whose exchanges with the agents go through `outbound` here. Only this folder
imports the SDK.
"""

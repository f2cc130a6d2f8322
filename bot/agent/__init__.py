"""The agent: the loop, the LLM client and stream assembly, tool execution, truncation, history, prompts.

May import storage, services and the top-level modules; never the channel, a domain or an edge.
"""

__all__ = ["effects", "events", "executor", "history", "llm", "loop", "prompts", "sse", "thinking",
    "tool_batch", "toolspec", "truncation", "turn_setup", "turn_state", "untrusted", "vision",
    "web_fetch"]

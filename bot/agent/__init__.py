"""The agent: the loop, the LLM client and stream assembly, tool execution, truncation, history, prompts.

May import storage, services and the top-level modules; never the channel, a domain or an edge.
"""

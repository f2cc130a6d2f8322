"""Where a message comes in and goes out: webhook, inbound rows, outbound sends, Twilio, formatting, links.

May import storage, services and the top-level modules; never the agent, a domain or an edge.
"""

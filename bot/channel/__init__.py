"""Where a message comes in and goes out: webhook, inbound rows, outbound sends, Twilio, formatting, links.

May import storage, services and the top-level modules; never the agent, a domain or an edge.
"""

__all__ = ["app_keys", "buttons", "console", "context", "download", "email", "formatting", "gauges",
    "inbound", "inbound_store", "keywords", "links", "locale", "malformed", "maths", "menus", "metering",
    "outbound", "prices", "scheduled", "spool", "spool_retry", "streaming", "twilio_client", "web",
    "webhook_checks"]

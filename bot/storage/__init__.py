"""Storage: tables and migrations, the database engine, the shared state (queue, locks, TTL keys), files.

May import only the top-level config, logs, metrics and clock modules.
"""

__all__ = ["counting", "db", "erasures", "file_locks", "filestore", "job_queue", "migrate", "models",
    "pubsub", "state"]

"""What orders work: the workers (queue, user locks, sweeper), the job workers (background jobs), the
runner of periodic jobs, retention.

An edge: may import the core and every domain; never the agent (handlers bring it), the web pages,
the console or doctor.
"""

__all__ = ["job_workers", "messages", "rate", "retention", "scheduler", "workers"]

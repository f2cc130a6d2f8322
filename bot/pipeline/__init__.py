"""What orders work: the workers (queue, user locks, sweeper, outbox sender), periodic jobs, retention.

May import storage, services, the channel and capabilities; never the agent (handlers bring it).
"""

"""What tools and handlers build on: documents, library, memory, e-mail, web fetch, sandbox, payments, quiz…

May import storage, services, the channel, the agent's tool contract and the scheduler's sends API.
"""

"""Serving a class from one process: generations decoded together (batching), bounded caches (memory),
and the server's start-up settings (server)."""

"""``placement-api dashboard``: a read-only page of the cloud's capacity, kept live.

It is a client of the API like any other (``placement_client``): it reads
``GET /capacity``, ``GET /heartbeats`` and follows ``GET /changes``, keeps one
snapshot (and a usage history, ``history``, in memory), and serves the page,
small JSON views of the snapshot and server-sent events that tell browsers
when it changed, to requests addressed to it (``hosts``: the Host check).
See docs/dashboard.md.
"""

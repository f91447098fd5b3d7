"""`mirrorsim chaos`: a seeded, shrinking explorer of mirror lifecycles.

Schedules (``schedule``) of operator commands, faults and load (``steps``) run against two
real clusters, are checked against the invariants (``invariants``), a violating one is
shrunk (``shrink``) and written as a drill that replays it (``report``); ``explorer``
runs many schedules on the same two clusters.
"""

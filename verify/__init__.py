"""Convergence verification: prove with Spark that a destination log mirrors its source.

``segments`` reads Kafka's on-disk layout, ``segment_source`` exposes it to Spark as the
``mirrorsim-segments`` data source, ``convergence`` holds the DataFrame → DataFrame
comparison, and ``job`` runs it into a ``VerifyReport``. See docs/verify.md.
"""

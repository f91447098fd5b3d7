"""The broker's network layer: listener, connections, request dispatch."""

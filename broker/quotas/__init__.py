"""Client quotas: entities and keys, where they are stored, and their enforcement."""

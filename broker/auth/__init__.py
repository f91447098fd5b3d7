"""Authentication and authorization: ACL bindings and their filters (store CRUD for now)."""

"""Shared test helpers, imported by test modules in every test directory."""

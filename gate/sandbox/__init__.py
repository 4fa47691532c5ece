"""Run candidate programs under limits (see base.py for the interface)."""

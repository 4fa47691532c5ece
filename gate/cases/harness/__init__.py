"""Programs that run inside the sandbox, next to the candidate's code.

Each module here is copied into a run's private working directory and run by the sandbox's interpreter, so it
uses the standard library only and imports nothing from `gate`. They never receive an expected value: only the
inputs go in, and results come back on the result channel as plain data (`wire.py`).
"""

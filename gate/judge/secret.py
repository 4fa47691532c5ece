"""A secret value that does not show itself: its repr and str are `***`; it scrubs itself out of text."""

from __future__ import annotations

from collections.abc import Mapping

MASK = "***"


class Secret:
    """An API key read from the environment at the edge. Only `reveal()` gives the value, for the one header
    that needs it; printing, logging or formatting the object shows `***`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    @classmethod
    def from_environment(cls, name: str, environ: Mapping[str, str]) -> Secret | None:
        """The secret in variable `name`, or None when it is unset or empty."""
        value = environ.get(name, "")
        return cls(value) if value else None

    def reveal(self) -> str:
        """The value itself; call it only where it leaves the process (an Authorization header)."""
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the value replaced by `***` (a server may echo the key back)."""
        return text.replace(self._value, MASK) if self._value else text

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

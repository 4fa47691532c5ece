"""A secret value (a token, an API key) that does not show itself: its repr and str are `***`."""

from __future__ import annotations

from collections.abc import Mapping

MASK = "***"


class Secret:
    """A token or API key read from the environment at the edge. Only `reveal()` gives the value, for the one header
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

    def redact(self, text: str, truncated: bool = False) -> str:
        """`text` with every occurrence of the value replaced by `***` (a server may echo the key back).
        When `text` was cut from something longer, a tail that could be the start of the value is masked too."""
        if not self._value:
            return text
        text = text.replace(self._value, MASK)
        if truncated:
            for length in range(min(len(self._value) - 1, len(text)), 0, -1):
                if text.endswith(self._value[:length]):
                    return text[:-length] + MASK
        return text

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

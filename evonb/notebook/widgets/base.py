"""Widgets that still read well without a widget frontend (nbconvert, terminals, VS Code)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any


class FallbackMixin:
    """Adds ``text/html`` and ``text/plain`` to a widget's mime bundle.

    Frontends with a widget manager render the live widget; others (nbconvert, a terminal, an
    untrusted notebook) show the static HTML or the text.
    """

    @abstractmethod
    def fallback_html(self) -> str:
        """Static HTML showing what the widget shows."""
        raise NotImplementedError

    @abstractmethod
    def fallback_text(self) -> str:
        """Plain text showing what the widget shows."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]
        data["text/plain"] = self.fallback_text()
        data["text/html"] = self.fallback_html()
        return data

"""The interface the load generator sends to: engines/ build an Endpoint, loadgen/ only reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send: OpenAI base URLs (load-balanced per request) and API options."""

    base_urls: tuple[str, ...]
    model: str
    api: Literal["completions", "chat"] = "completions"
    api_key: str | None = field(default=None, repr=False)
    supports_ignore_eos: bool = True
    continuous_usage_stats: bool = False

    def url(self, index: int) -> str:
        """The full request URL for request `index` (round-robin over base URLs)."""
        base = self.base_urls[index % len(self.base_urls)]
        path = "/v1/chat/completions" if self.api == "chat" else "/v1/completions"
        return base + path

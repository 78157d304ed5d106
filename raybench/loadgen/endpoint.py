"""The interface the load generator sends to: engines/ build an Endpoint, loadgen/ only reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Balancer", "Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send: OpenAI base URLs (load-balanced per request) and API options."""

    base_urls: tuple[str, ...]
    model: str
    api: Literal["completions", "chat"] = "completions"
    api_key: str | None = field(default=None, repr=False)
    supports_ignore_eos: bool = True
    continuous_usage_stats: bool = False
    balance: Literal["round_robin", "least_outstanding"] = "round_robin"

    def url(self, index: int) -> str:
        """The full request URL for request `index` (round-robin over base URLs)."""
        base = self.base_urls[index % len(self.base_urls)]
        path = "/v1/chat/completions" if self.api == "chat" else "/v1/completions"
        return base + path


class Balancer:
    """Per-generator replica choice: round robin by request index, or the replica with the fewest requests
    in flight from this generator (ties broken round robin). `acquire` before sending, `release` when done."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.outstanding = [0] * len(endpoint.base_urls)

    def acquire(self, index: int) -> tuple[str, int]:
        """The full request URL for request `index` and the replica slot to release afterwards."""
        n = len(self.endpoint.base_urls)
        slot = index % n
        if self.endpoint.balance == "least_outstanding":
            slot = min(range(n), key=lambda i: (self.outstanding[i], (i - index) % n))
        self.outstanding[slot] += 1
        path = "/v1/chat/completions" if self.endpoint.api == "chat" else "/v1/completions"
        return self.endpoint.base_urls[slot] + path, slot

    def release(self, slot: int) -> None:
        self.outstanding[slot] -= 1

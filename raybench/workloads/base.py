"""The prompt-source contract: Prompt, the registry of sources by kind, and the workload fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from raybench.errors import ConfigError, Problem
from raybench.workloads.tokenizer import TokenCounter, load_counter

__all__ = ["Prompt", "PromptSource", "fingerprint_text", "register_source", "source_for", "workload_fingerprint"]


@dataclass(frozen=True)
class Prompt:
    """One request's content: the text sent, its token counts, and a fingerprint of the text."""

    index: int
    text: str
    input_tokens: int
    output_tokens: int
    fingerprint: str
    # Multi-turn and traces: the chat history sent as a messages list ((role, content) pairs; `text` is then
    # its rendered transcript, sent to completions endpoints), and where the request sits in its session.
    messages: tuple[tuple[str, str], ...] | None = None
    session_id: str | None = None
    turn: int | None = None


class PromptSource(Protocol):
    """Prompt `i` depends only on the spec and `i`: every engine and generator sees the same prompts."""

    kind: str
    counter: TokenCounter

    def prompt(self, index: int) -> Prompt: ...
    def describe(self) -> dict[str, Any]: ...


def fingerprint_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


Factory = Callable[[Any, TokenCounter], PromptSource]
F = TypeVar("F", bound=Factory)
_SOURCES: dict[str, Factory] = {}


def register_source(kind: str) -> Callable[[F], F]:
    """Decorator: make a source class (spec, counter) -> PromptSource available under `kind`."""

    def wrap(factory: F) -> F:
        _SOURCES[kind] = factory
        return factory

    return wrap


def source_for(spec: Any, tokenizer: str | None = None, cache: Any = None) -> PromptSource:
    """Build the source for `spec.kind` (loading and validating its data now, not mid-sweep).

    `cache` (a ResultStore, raybench.workloads.prepare.workload_cache) holds prepared datasets; sources
    that prepare one (`uses_cache`) read it instead of tokenizing again, and fill it.
    """
    factory = _SOURCES.get(str(spec.kind))
    if factory is None:
        known = ", ".join(sorted(_SOURCES))
        raise ConfigError(
            "workload", [Problem("workload.kind", f"unknown workload kind {spec.kind!r}; known: {known}")]
        )
    if getattr(factory, "uses_cache", False):
        return cast(PromptSource, cast(Any, factory)(spec, load_counter(tokenizer), cache))
    return factory(spec, load_counter(tokenizer))


def workload_fingerprint(source: PromptSource, sample: int = 256) -> str:
    """Hash of the parameters, the token counter, and the first `sample` prompts themselves."""
    digest = hashlib.sha256(json.dumps(source.describe(), sort_keys=True, default=str).encode())
    digest.update(source.counter.identity.encode())
    for index in range(sample):
        p = source.prompt(index)
        digest.update(f"{p.fingerprint}:{p.input_tokens}:{p.output_tokens};".encode())
    return digest.hexdigest()

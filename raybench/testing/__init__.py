"""Fakes shipped with the package, for tests and benchmarks: a scripted loopback OpenAI server.

The names are loaded on first use (PEP 562), so `python -m raybench.testing.fake_openai` runs that module
once, as `__main__`, instead of after the package had already imported it (runpy's RuntimeWarning)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raybench.testing.clock import FakeClock
    from raybench.testing.fake_openai import FakeOpenAIServer, Script, WrittenStream

__all__ = ["FakeClock", "FakeOpenAIServer", "Script", "WrittenStream"]

_HOMES = {
    "FakeClock": "raybench.testing.clock",
    "FakeOpenAIServer": "raybench.testing.fake_openai",
    "Script": "raybench.testing.fake_openai",
    "WrittenStream": "raybench.testing.fake_openai",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'raybench.testing' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)

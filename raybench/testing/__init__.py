"""Fakes shipped with the package, for tests and benchmarks: a scripted loopback OpenAI server."""

from raybench.testing.clock import FakeClock
from raybench.testing.fake_openai import FakeOpenAIServer, Script, WrittenStream

__all__ = ["FakeClock", "FakeOpenAIServer", "Script", "WrittenStream"]

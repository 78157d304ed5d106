"""Fakes shipped with the package, for tests and benchmarks: a scripted loopback OpenAI server."""

from raybench.testing.fake_openai import FakeOpenAIServer, Script, WrittenStream

__all__ = ["FakeOpenAIServer", "Script", "WrittenStream"]

"""Faithful fakes of real engine servers: each accepts its engine's command line (and rejects unknown flags),
serves its health, info and metrics formats, and streams OpenAI SSE. Run as
`python -m raybench.testing.engines KIND ENGINE-ARGS...`, i.e. what follows the engine's own command."""

from raybench.testing.engines.cli import FAKE_KINDS, FakeConfig, parse_engine_args


def fake_launcher(kind: str) -> list[str]:
    """The `launcher` that makes raybench start the fake instead of the real engine of `kind`."""
    import sys

    return [sys.executable, "-m", "raybench.testing.engines", kind]


__all__ = ["FAKE_KINDS", "FakeConfig", "fake_launcher", "parse_engine_args"]

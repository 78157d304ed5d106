"""The public surface is explicit: raybench.__all__ is sorted and every name resolves."""

from __future__ import annotations

import raybench


def test_all_is_sorted_and_resolves() -> None:
    assert list(raybench.__all__) == sorted(raybench.__all__)
    for name in raybench.__all__:
        assert hasattr(raybench, name), name


def test_importing_raybench_does_not_import_ray() -> None:
    import subprocess
    import sys

    code = "import sys, raybench; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

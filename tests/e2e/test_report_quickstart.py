"""`raybench report` on a real quickstart run, and its HTML rendered by headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import numpy as np
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's `chromium`)"
)


def _cli(
    *args: str, cwd: Path, timeout: int = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "raybench", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quickstart")
    # A private Ray temp dir (short: it holds Unix sockets), so the embedded Ray never joins a cluster
    # that another process on this machine happens to have running.
    ray_tmp = tempfile.mkdtemp(prefix="rb-", dir="/tmp")
    proc = _cli(
        "run", str(ROOT / "jobs" / "quickstart.yaml"), "--output", str(out),
        "--set", "load.steps=[4, 16, 32]", "--set", "load.duration_s=2", "--set", "load.warmup_requests=8",
        cwd=out, env={**os.environ, "RAY_TMPDIR": ray_tmp},
    )  # fmt: skip
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = [p for p in out.iterdir() if p.is_dir() and p.name.startswith("quickstart-")]
    return run


def _chromium(args: list[str], page: Path, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", *args, page.as_uri(),
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _screenshot_and_dom(page: Path, tmp_path: Path) -> tuple[np.ndarray, str]:
    from PIL import Image

    shot = tmp_path / "shot.png"
    proc = _chromium([f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars"], page, tmp_path / "p1")
    assert shot.is_file(), proc.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    dom = _chromium(["--dump-dom"], page, tmp_path / "p2")
    assert dom.returncode == 0, dom.stderr[-2000:]
    return pixels, dom.stdout


def test_report_prints_the_tables_of_the_run(run_dir: Path, tmp_path: Path) -> None:
    proc = _cli("report", str(run_dir), "--png", str(tmp_path / "png"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Pareto table — each engine at its knee" in out
    assert "Saturation — sim-vllm" in out and "◀ knee" in out
    assert "Highest goodput under SLO" in out
    assert len(list((tmp_path / "png").glob("*.png"))) == 4


def test_the_real_summary_validates_against_the_published_schema(run_dir: Path) -> None:
    schema = json.loads((ROOT / "docs" / "summary.schema.json").read_text())
    summary = json.loads((run_dir / "engines" / "sim-vllm" / "summary.json").read_text())
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)


@needs_chromium
def test_html_report_renders_in_a_browser(run_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = _cli("report", str(run_dir), "--html", str(page), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pixels, dom = _screenshot_and_dom(page, tmp_path)
    assert pixels.var() > 200, "the screenshot is blank"
    assert (pixels < 200).mean() > 0.02, "almost nothing is drawn"
    for marker in ('id="pareto-table"', 'id="best-table"', 'id="saturation-0"', 'id="plot-pareto"'):
        assert marker in dom
    assert dom.count("<svg") == 4 and "sim-vllm" in dom and "Throughput vs TTFT P99" in dom


@needs_chromium
def test_hostile_engine_names_stay_text_in_the_browser(run_dir: Path, tmp_path: Path) -> None:
    summary = json.loads((run_dir / "engines" / "sim-vllm" / "summary.json").read_text())
    summary.update(engine_id=HOSTILE, config=HOSTILE, motor=HOSTILE)
    hostile = tmp_path / "hostile-run" / "engines" / "evil"
    hostile.mkdir(parents=True)
    (hostile / "summary.json").write_text(json.dumps(summary))
    page = tmp_path / "hostile.html"
    proc = _cli("report", str(tmp_path / "hostile-run"), "--html", str(page), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _, dom = _screenshot_and_dom(page, tmp_path)
    assert "<script" not in dom.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom

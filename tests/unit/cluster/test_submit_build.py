"""What `raybench submit` sends (entrypoint, runtime env, the job file) and how it reads addresses (no Ray)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

import raybench
from raybench.cli import main
from raybench.cluster.inventory import dashboard_url
from raybench.cluster.submit import JOB_FILE, build_submission, results_location
from raybench.errors import RaybenchError


def test_the_job_file_and_this_raybench_travel_with_the_submission(tmp_path: Path) -> None:
    text = "name: x  # the spec, verbatim\n"
    sub = build_submission(text, "x", tmp_path, ["load.steps=[1, 2]"], "s3://b/p", ["orjson>=3.8"])
    assert (tmp_path / JOB_FILE).read_text() == text
    assert shlex.split(sub.entrypoint) == ["python", "-m", "raybench", "run", JOB_FILE, "--set", "load.steps=[1, 2]",
                                           "--output", "s3://b/p"]  # fmt: skip
    env = sub.runtime_env
    assert env["working_dir"] == str(tmp_path)
    [module] = env["py_modules"]
    assert Path(module) == Path(raybench.__file__).resolve().parent and (Path(module) / "cli.py").is_file()
    assert env["pip"] == ["orjson>=3.8"] and "__pycache__" in env["excludes"]
    assert sub.metadata["raybench_job"] == "x"


def test_no_pip_section_unless_asked(tmp_path: Path) -> None:
    sub = build_submission("name: x\n", "x", tmp_path, [], None, [])
    assert "pip" not in sub.runtime_env
    assert shlex.split(sub.entrypoint) == ["python", "-m", "raybench", "run", JOB_FILE]


@pytest.mark.parametrize(
    ("given", "url"),
    [("http://127.0.1.1:8265/", "http://127.0.1.1:8265"), ("127.0.1.1:8265", "http://127.0.1.1:8265"),
     ("https://ray.example:443", "https://ray.example:443")],
)  # fmt: skip
def test_dashboard_addresses(given: str, url: str) -> None:
    assert dashboard_url(given) == url


def test_a_ray_client_address_is_refused_with_what_to_write() -> None:
    with pytest.raises(RaybenchError, match=r"give the dashboard instead, e\.g\. http://HEAD:8265"):
        dashboard_url("ray://127.0.1.1:10001")


def test_results_location_is_the_last_results_line() -> None:
    log = "raybench run q -> file:///x/q-1\nresults: file:///x/q-1\nmore\n"
    assert results_location(log) == "file:///x/q-1"
    assert results_location("the job died early\n") is None


def test_submit_and_cluster_check_need_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["submit", "jobs/quickstart.yaml"], ["cluster", "check"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert "--address" in capsys.readouterr().err


def test_a_bad_spec_fails_before_any_cluster_is_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "bad.yaml"
    job.write_text("name: bad\nunknown_key: 1\n")
    assert main(["cluster", "check", "--address", "http://127.0.0.1:9", str(job)]) == 2
    assert main(["submit", str(job), "--address", "http://127.0.0.1:9"]) == 2
    assert "unknown_key" in capsys.readouterr().err


@pytest.mark.parametrize(("status", "code"), [("SUCCEEDED", 0), ("FAILED", 1), ("STOPPED", 1)])
def test_the_exit_code_follows_the_ray_job(status: str, code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from raybench.cluster import command

    def fake_follow(url: str, job_id: str, write: object) -> tuple[str, str]:
        return status, "raybench run q\nresults: s3://b/p/q-1\n"

    monkeypatch.setattr(command, "follow", fake_follow)
    out, err = io.StringIO(), io.StringIO()
    got = command._follow("http://h:8265", "raysubmit_1", "s3://b/p", Console(file=out, width=200),
                          Console(file=err, width=200))  # fmt: skip
    assert got == code
    if code:
        assert f"Ray job raysubmit_1 {status.lower()}" in err.getvalue() and "ray job logs" in err.getvalue()
    else:
        assert "results at s3://b/p/q-1" in out.getvalue()

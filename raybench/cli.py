"""The `raybench` command: argparse subcommands that parse and delegate, nothing more."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from raybench.config.job import JobSpec
from raybench.config.loader import load_job
from raybench.errors import ConfigError, RaybenchError
from raybench.version import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raybench", description="Benchmark LLM serving engines on Ray.")
    parser.add_argument("--version", action="version", version=f"raybench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    validate = sub.add_parser("validate", help="check job specs (files or folders of .yaml) without running")
    validate.add_argument("jobs", nargs="+", help="job files, or folders holding them")
    validate.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="overrides")
    run = sub.add_parser("run", help="run a job: deploy engines, sweep, store records and summaries")
    run.add_argument("job", help="the job spec (YAML)")
    run.add_argument("--output", help="results URI (overrides output.uri): a path, s3://... or gs://...")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        dest="overrides",
        help="override a spec value, e.g. --set load.duration_s=30 (repeatable)",
    )
    run.add_argument("--dashboard", action="store_true", help="start the Ray dashboard of an embedded Ray")
    return parser


def _job_files(items: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")))
        else:
            files.append(path)
    return files


def _validate(args: argparse.Namespace, console: Console) -> int:
    code = 0
    for file in _job_files(args.jobs):
        try:
            spec = load_job(file, args.overrides)
        except ConfigError as exc:
            _print_config_error(exc, console)
            code = 2
            continue
        console.print(f"[green]ok[/] {file}: {spec.name}, {len(spec.engines)} engine(s), steps {spec.load.steps}")
    return code


def _print_config_error(exc: ConfigError, console: Console) -> None:
    console.print(f"[red]error[/] {exc.source}: {len(exc.problems)} problem(s)", highlight=False, soft_wrap=True)
    for problem in exc.problems:
        console.print(f"  {problem}", highlight=False, markup=False, soft_wrap=True)


def _run(args: argparse.Namespace, console: Console) -> int:
    overrides = list(args.overrides)
    if args.output:
        overrides.append(f"output.uri={args.output}")
    spec: JobSpec = load_job(args.job, overrides)
    from raybench.sweep.driver import run_job  # imports Ray: only when a run is asked for

    result = run_job(spec, console=console, dashboard=args.dashboard)
    console.print(f"results: {result.uri}")
    for engine_id, reason in result.failures.items():
        console.print(f"[red]failed[/] {engine_id}: {reason.splitlines()[0]}")
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (0 ok, 1 run failed, 2 bad input)."""
    args = _parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:  # piped or captured: keep table rows on one line each
        console = Console(width=160)
    errors = Console(stderr=True)
    try:
        if args.command == "validate":
            return _validate(args, errors)
        return _run(args, console)
    except ConfigError as exc:
        _print_config_error(exc, errors)
        return 2
    except RaybenchError as exc:
        errors.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        return exc.exit_code
    except KeyboardInterrupt:
        errors.print("interrupted; the run folder holds every part written so far")
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The `raybench` command: argparse subcommands that parse and delegate, nothing more."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
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
    workload = sub.add_parser("workload", help="show what a job's workload sends (ISL/OSL histograms)")
    workload.add_argument("job", help="the job spec (YAML)")
    workload.add_argument("--preview", action="store_true", help="histograms of the first prompts (the default)")
    workload.add_argument("--count", type=int, default=1000, help="how many prompts to sample (default 1000)")
    workload.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="overrides")
    matrix = sub.add_parser("matrix", help="run a matrix of cells (models x precisions x engines x configs)")
    matrix.add_argument("matrix", help="the matrix spec (YAML)")
    matrix.add_argument("--resume", metavar="MATRIX_ID", help="continue a matrix: complete cells are skipped")
    matrix.add_argument("--dry-run", action="store_true", help="list the cells and stop")
    runs = sub.add_parser("runs", help="list the runs stored under a results location")
    runs.add_argument("uri", nargs="?", default="./results", help="results location (default ./results)")
    runs.add_argument("--engine", help="only runs that include this engine id")
    runs.add_argument("--model", help="only runs of this model name")
    runs.add_argument("--status", choices=["complete", "failed", "incomplete"])
    runs.add_argument("--json", action="store_true", help="print JSON instead of a table")
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
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue an incomplete run of this job; completed engines and steps are skipped",
    )
    _add_report_parser(sub)
    _add_cluster_parsers(sub)
    return parser


def _add_cluster_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    submit = sub.add_parser("submit", help="run a job on a Ray cluster through its dashboard (Ray Jobs API)")
    submit.add_argument("job", help="the job spec (YAML); it travels with the submission")
    submit.add_argument("--address", required=True, help="the cluster's dashboard, e.g. http://HEAD:8265")
    submit.add_argument("--output", help="results URI on the cluster (overrides output.uri), e.g. s3://bucket/prefix")
    submit.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="overrides")
    submit.add_argument("--no-wait", action="store_true", help="submit and return; do not stream the logs")
    submit.add_argument("--pip", action="append", default=[], metavar="REQ", help="extra pip requirement for the job")
    submit.add_argument("--no-fit-check", action="store_true", help="submit even if the job does not fit right now")
    cluster = sub.add_parser("cluster", help="ask a Ray cluster what it offers")
    actions = cluster.add_subparsers(dest="cluster_command", required=True)
    check = actions.add_parser("check", help="nodes, GPUs by type, CPUs, `loadgen` nodes; with JOB, whether it fits")
    check.add_argument("job", nargs="?", help="a job spec to fit onto the cluster")
    check.add_argument("--address", required=True, help="the cluster's dashboard, e.g. http://HEAD:8265")
    check.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="overrides")
    check.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser("report", help="compare runs: Pareto and saturation tables, plots, HTML")
    report.add_argument("uris", nargs="+", metavar="URI", help="run folders, results folders or summary.json files")
    report.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table", dest="fmt")
    report.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    report.add_argument("--png", metavar="DIR", help="also write every plot as PNG and SVG into DIR")
    report.add_argument("--recompute", action="store_true", help="rebuild summaries from the stored records")


def _report(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from raybench.report.command import report_command

    return report_command(
        args.uris, fmt=args.fmt, html=args.html, png=args.png, recompute=args.recompute, console=console, notices=errors
    )


def _cluster(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from raybench.cluster.command import cluster_check_command, submit_command

    if args.command == "cluster":
        return cluster_check_command(args.address, args.job, args.overrides, args.json, console)
    return submit_command(args.job, args.address, args.output, args.overrides, wait=not args.no_wait, pip=args.pip,
                          fit_check=not args.no_fit_check, console=console, notices=errors)  # fmt: skip


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
        if _is_matrix(file):
            code = max(code, _validate_matrix(file, console))
            continue
        try:
            spec = load_job(file, args.overrides)
        except ConfigError as exc:
            _print_config_error(exc, console)
            code = 2
            continue
        console.print(f"[green]ok[/] {file}: {spec.name}, {len(spec.engines)} engine(s), steps {spec.load.steps}")
    return code


def _is_matrix(file: Path) -> bool:
    """A matrix spec names a `base` job and `models`; everything else is validated as a job."""
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else None
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and "base" in raw and "models" in raw


def _validate_matrix(file: Path, console: Console) -> int:
    from raybench.sweep.matrix import expand, load_matrix

    try:
        spec, base = load_matrix(file)
        cells = expand(spec, base, source=str(file))
    except ConfigError as exc:
        _print_config_error(exc, console)
        return 2
    console.print(f"[green]ok[/] {file}: matrix {spec.name}, {len(cells)} cells")
    return 0


def _print_config_error(exc: ConfigError, console: Console) -> None:
    console.print(f"[red]error[/] {exc.source}: {len(exc.problems)} problem(s)", highlight=False, soft_wrap=True)
    for problem in exc.problems:
        console.print(f"  {problem}", highlight=False, markup=False, soft_wrap=True)


def _workload(args: argparse.Namespace, console: Console) -> int:
    from raybench.workloads import source_for
    from raybench.workloads.preview import print_preview

    spec = load_job(args.job, args.overrides)
    print_preview(source_for(spec.workload, spec.model.tokenizer), max(args.count, 1), console)
    return 0


def _run(args: argparse.Namespace, console: Console) -> int:
    overrides = list(args.overrides)
    if args.output:
        overrides.append(f"output.uri={args.output}")
    spec: JobSpec = load_job(args.job, overrides)
    from raybench.sweep.driver import run_job  # imports Ray: only when a run is asked for

    result = run_job(spec, console=console, dashboard=args.dashboard, resume=args.resume, job_path=args.job)
    console.print(f"results: {result.uri}")
    for engine_id, reason in result.failures.items():
        console.print(f"[red]failed[/] {engine_id}: {reason.splitlines()[0]}")
    return 0 if result.ok else 1


_DELEGATED: dict[str, Callable[[argparse.Namespace, Console, Console], int]] = {
    "report": _report,
    "submit": _cluster,
    "cluster": _cluster,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (0 ok, 1 run failed, 2 bad input)."""
    args = _parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:  # piped or captured: keep table rows on one line each
        console = Console(width=160)
    errors = Console(stderr=True, soft_wrap=True)
    try:
        if args.command == "validate":
            return _validate(args, errors)
        if args.command == "matrix":
            from raybench.sweep.matrix_command import matrix_command

            return matrix_command(args.matrix, args.resume, args.dry_run, console)
        if args.command == "runs":
            from raybench.results.runs_command import print_runs

            return print_runs(args.uri, console, args.engine, args.model, args.status, args.json)
        if args.command == "workload":
            return _workload(args, console)
        if args.command in _DELEGATED:
            return _DELEGATED[args.command](args, console, errors)
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

"""The `raybench cluster check` and `raybench submit` commands: inventory and fit tables, submit and follow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from raybench.cluster.fit import FitVerdict, Inventory, check_fit
from raybench.cluster.inventory import dashboard_url, fetch_inventory
from raybench.cluster.submit import build_submission, follow, results_location, staging_dir, submit
from raybench.config.loader import load_job

__all__ = ["cluster_check_command", "submit_command"]

REFUSED = 2  # the job does not fit the cluster: nothing was deployed or submitted


def inventory_table(inventory: Inventory, url: str) -> Table:
    table = Table(title=f"Ray cluster at {url}", title_justify="left")
    for column in ("Node", "Role", "CPUs", "GPUs", "GPU type", "loadgen", "Other resources"):
        table.add_column(column, justify="right" if column in ("CPUs", "GPUs", "loadgen") else "left")
    for n in inventory.nodes:
        other = ", ".join(f"{k}={v:g}" for k, v in sorted(n.resources.items()) if k != "loadgen") or "-"
        table.add_row(
            f"{n.ip} {n.node_id[:8]}",
            "head" if n.is_head else "worker",
            f"{n.cpus:g}",
            f"{n.gpus:g}",
            n.accelerator or ("-" if not n.gpus else "unknown"),
            f"{n.loadgen:g}",
            escape(other),
        )
    by_type = ", ".join(f"{count:g}x {kind}" for kind, count in inventory.gpus_by_type().items()) or "none"
    loadgen_nodes = sum(1 for n in inventory.nodes if n.loadgen > 0)
    table.caption = (
        f"{len(inventory.nodes)} node(s), {inventory.cpus:g} CPUs, GPUs: {by_type}, "
        f"`loadgen` {inventory.loadgen:g} on {loadgen_nodes} node(s)"
    )
    table.caption_justify = "left"
    return table


def verdict_table(verdict: FitVerdict, job: str) -> Table:
    table = Table(title=f"does {job} fit?", title_justify="left")
    for column in ("Engine", "Kind", "Replicas", "GPUs / replica", "Nodes / replica", "Placed on"):
        table.add_column(column)
    for row in verdict.engines:
        placed = "; ".join(" + ".join(nodes) for nodes in row["placed"])
        placed = placed or ("already running elsewhere" if row["nodes_per_replica"] == 0 else "-")
        gpus = f"{row['gpus_per_replica']:g}" + (f" {row['accelerator']}" if row["accelerator"] else "")
        table.add_row(
            row["engine_id"],
            row["kind"],
            str(row["replicas"]),
            gpus,
            str(row["nodes_per_replica"] or "-"),
            escape(placed),
        )
    fleet = verdict.fleet
    where = " on `loadgen` nodes" if fleet["loadgen_each"] is not None else ""
    table.caption = f"fleet: {fleet['generators']} generator(s) x {fleet['cpus_each']:g} CPU{where}"
    table.caption_justify = "left"
    return table


def print_verdict(verdict: FitVerdict, console: Console) -> None:
    if verdict.fits:
        console.print("[green]fits[/]: every engine replica and the fleet find their resources")
        return
    console.print(f"[red]does not fit[/]: {len(verdict.shortfalls)} shortfall(s)")
    for shortfall in verdict.shortfalls:
        console.print(f"  {shortfall}", markup=False, highlight=False, soft_wrap=True)


def cluster_check_command(address: str, job: str | None, overrides: list[str], as_json: bool, console: Console) -> int:
    """Show what the cluster offers and, given a job, whether it fits; 2 when it does not."""
    spec = load_job(job, overrides) if job else None  # a bad spec fails before the cluster is asked
    url = dashboard_url(address)
    inventory = fetch_inventory(url)
    verdict = check_fit(inventory, spec) if spec else None
    if as_json:
        out: dict[str, Any] = {"address": url, **inventory.to_json()}
        if verdict is not None:
            out["job"] = {"file": job, "name": spec.name if spec else None, **verdict.to_json()}
        console.file.write(json.dumps(out, indent=2) + "\n")
    else:
        console.print(inventory_table(inventory, url))
        if verdict is not None and job:
            console.print(verdict_table(verdict, job))
            print_verdict(verdict, console)
    return REFUSED if verdict is not None and not verdict.fits else 0


def submit_command(
    job: str,
    address: str,
    output: str | None,
    overrides: list[str],
    *,
    wait: bool = True,
    pip: list[str] | None = None,
    fit_check: bool = True,
    console: Console,
    notices: Console,
) -> int:
    """Check the fit, submit the job with this raybench, follow its logs; the exit code follows the job's."""
    checked = [*overrides, f"output.uri={output}"] if output else list(overrides)
    spec = load_job(job, checked)
    url = dashboard_url(address)
    if fit_check:
        verdict = check_fit(fetch_inventory(url), spec)
        if not verdict.fits:
            notices.print(f"[red]refused[/]: {job} does not fit the cluster at {url}; nothing was submitted")
            print_verdict(verdict, notices)
            notices.print("(an autoscaling cluster adds nodes on demand: --no-fit-check submits anyway)")
            return REFUSED
    if "://" not in spec.output.uri and not Path(spec.output.uri).is_absolute():
        notices.print(
            f"note: output {spec.output.uri} is relative to the job's working folder on the cluster, which "
            "Ray deletes; give --output s3://bucket/prefix (or an absolute path on a shared disk)"
        )
    staging = staging_dir()
    try:
        submission = build_submission(
            Path(job).read_text(encoding="utf-8"), spec.name, staging, overrides, output, pip or []
        )
        job_id = submit(url, submission)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # Ray has uploaded it by now
    console.print(f"submitted {spec.name} as Ray job {job_id} to {url} (dashboard: {url}/#/jobs/{job_id})")
    if not wait:
        console.print(f"follow it: ray job logs --follow --address {url} {job_id}")
        return 0
    return _follow(url, job_id, spec.output.uri, console, notices)


def _follow(url: str, job_id: str, output_uri: str, console: Console, notices: Console) -> int:
    """Stream the job's log; 0 when it succeeded (naming where its results are), 1 when not."""
    try:
        status, log = follow(url, job_id, lambda text: (console.file.write(text), console.file.flush()))
    except KeyboardInterrupt:
        notices.print(f"stopped following; Ray job {job_id} keeps running (ray job stop --address {url} {job_id})")
        return 130
    where = results_location(log) or output_uri
    if status != "SUCCEEDED":
        notices.print(f"[red]Ray job {job_id} {status.lower()}[/]; logs: ray job logs --address {url} {job_id}")
        return 1
    console.print(f"Ray job {job_id} succeeded; results at {where} (read them with: raybench report {where})")
    return 0

"""Reads a job spec from YAML, applies `--set` overrides, and turns every mistake into a Problem."""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from raybench.config.engine import ENGINE_KINDS, ENGINE_SPECS
from raybench.config.job import JobSpec
from raybench.config.workload import WORKLOAD_KINDS, WORKLOAD_SPECS
from raybench.errors import ConfigError, Problem

__all__ = ["apply_overrides", "apply_settings", "load_job", "parse_job", "spec_sha256"]


def load_job(path: str | Path, overrides: list[str] | None = None) -> JobSpec:
    """Read, override and validate a job file; raise ConfigError listing every problem."""
    source = str(path)
    file = Path(path)
    if not file.is_file():
        hint = "check the path" if not file.exists() else "it is a directory; give a .yaml file"
        raise ConfigError(source, [Problem("", f"no job file at {source!r} ({hint})")])
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        msg = f"not valid YAML at {where}: {reason}; fix the indentation or quoting there"
        if "constructor for the tag" in reason:  # yaml.safe_load refuses !!python/... tags: specs are data
            msg = f"YAML tag refused at {where}: {reason}; job specs are plain data, never code: remove the tag"
        raise ConfigError(source, [Problem("", msg)]) from None
    return parse_job(raw, source=source, overrides=overrides)


def parse_job(raw: Any, source: str = "<spec>", overrides: list[str] | None = None) -> JobSpec:
    """Validate an already-parsed mapping (with optional `path=value` overrides)."""
    if not isinstance(raw, dict):
        got = "an empty file" if raw is None else type(raw).__name__
        raise ConfigError(source, [Problem("", f"a job spec is a YAML mapping (name:, model:, ...); got {got}")])
    data = apply_overrides(raw, overrides or [], source)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_problem(e, data) for e in exc.errors()]) from None


def spec_sha256(spec: JobSpec) -> str:
    """A stable digest of the validated spec (defaults filled in), recorded in provenance."""
    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()


def apply_overrides(raw: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """Return a copy of `raw` with each `a.b.0.c=value` applied (value parsed as YAML)."""
    settings: dict[str, Any] = {}
    problems: list[Problem] = []
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            problems.append(Problem("--set", f"{item!r} is not path=value; write e.g. load.duration_s=30"))
            continue
        try:
            settings[key] = yaml.safe_load(text)
        except yaml.YAMLError:
            settings[key] = text
    try:
        data = apply_settings(raw, settings, source)
    except ConfigError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ConfigError(source, problems)
    return data


def apply_settings(raw: dict[str, Any], settings: dict[str, Any], source: str, origin: str = "--set") -> dict[str, Any]:
    """Return a copy of `raw` with each dotted `path: value` of `settings` applied."""
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(raw))
    problems = [
        Problem(key, f"{origin} {error}")
        for key, value in settings.items()
        if (error := _set_path(data, key.split("."), value))
    ]
    if problems:
        raise ConfigError(source, problems)
    return data


def _set_path(node: Any, parts: list[str], value: Any) -> str | None:
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return f"cannot index a list of {len(node)} with {part!r}; use 0..{len(node) - 1}"
            if last:
                node[int(part)] = value
                return None
            node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return None
            node = node.setdefault(part, {})
        else:
            return f"{'.'.join(parts[:i])} is a value, not a section"
    return None


_HINTS = {
    "int_parsing": "must be a whole number, e.g. 8",
    "int_from_float": "must be a whole number, e.g. 8",
    "float_parsing": "must be a number, e.g. 30 or 0.5",
    "string_type": "must be text; quote it",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list, e.g. [1, 4, 8, 16]",
    "dict_type": "must be a section (key: value lines)",
    "model_type": "must be a section (key: value lines)",
    "too_short": "must not be empty",
}


def _problem(err: Any, data: dict[str, Any]) -> Problem:
    loc = _clean_loc(tuple(err["loc"]))
    path = ".".join(str(p) for p in loc)
    kind = err["type"]
    got = f" (got {err['input']!r})" if kind not in ("missing", "extra_forbidden") else ""
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1], data)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hints = [f"did you mean {close[0]!r}?"] if close else []
        hints += [f"allowed keys here: {', '.join(allowed)}"] if allowed else []
        return Problem(path, "; ".join([f"unknown key {loc[-1]!r}", *hints]))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = err.get("ctx", {}).get("tag")
        found = f" (got {tag!r})" if tag is not None else ""
        return Problem(f"{path}.kind".lstrip("."), f"engine kind must be one of: {', '.join(ENGINE_KINDS)}{found}")
    if kind == "workload_kind":
        found = f" (got {err['input'].get('kind')!r})" if isinstance(err["input"], dict) else ""
        return Problem(f"{path}.kind", f"workload kind must be one of: {', '.join(WORKLOAD_KINDS)}{found}")
    if kind == "missing":
        return Problem(path, f"is required; add `{loc[-1]}: ...` here" if loc else "is required")
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return Problem(path, f"must be one of {expected}{got}")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return Problem(path, f"{err['msg'].lower()}{got}")
    if kind == "string_pattern_mismatch":
        return Problem(path, f"use letters, digits, '-', '_' or '.' only, starting with a letter or digit{got}")
    if kind == "value_error":
        return Problem(path, str(err["msg"]).removeprefix("Value error, "))
    return Problem(path, f"{_HINTS.get(kind, err['msg'])}{got}")


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the discriminator tag pydantic inserts (engines.0.simulated.x, workload.sharegpt.x)."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        after_index = i > 0 and isinstance(loc[i - 1], int)
        if (part in ENGINE_KINDS and after_index) or (part in WORKLOAD_KINDS and i > 0 and loc[i - 1] == "workload"):
            continue
        out.append(part)
    return tuple(out)


def _allowed_keys(loc: tuple[Any, ...], data: dict[str, Any]) -> list[str]:
    """The keys the model at `loc` accepts, found by walking JobSpec alongside the data."""
    model: type[BaseModel] | None = JobSpec
    node: Any = data
    for part in loc:
        node = node[part] if isinstance(node, (dict, list)) else None
        if isinstance(part, int):
            continue
        if model is None:
            return []
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field is not None else None
        if part == "workload" and isinstance(node, dict):
            model = WORKLOAD_SPECS.get(str(node.get("kind", "synthetic")))
        if part == "engines":
            model = None  # resolved by the engine's kind at the next (index) step
    if model is None and isinstance(node, dict):
        model = ENGINE_SPECS.get(str(node.get("kind")))
    return sorted(model.model_fields) if model is not None else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None

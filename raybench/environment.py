"""The only module that reads environment variables: Ray job context and named secrets."""

from __future__ import annotations

import os

__all__ = ["aws_region", "in_ray_job", "read_secret", "s3_endpoint_url"]


def in_ray_job() -> bool:
    """True inside `ray job submit` (or when RAY_ADDRESS points at a cluster): join it, don't start one."""
    return bool(os.environ.get("RAY_ADDRESS") or os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR"))


def read_secret(name: str) -> str | None:
    """The value of environment variable `name` (an API key), or None when unset or empty."""
    return os.environ.get(name) or None


def s3_endpoint_url() -> str | None:
    """The S3-compatible endpoint named by the standard AWS variables (AWS_ENDPOINT_URL_S3 first)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def aws_region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None

"""The base of every spec model: unknown keys are errors, values are validated on assignment."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel", "no_secrets_in_env"]

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


class StrictModel(BaseModel):
    """A spec section: `extra="forbid"` so a misspelt key is reported, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def no_secrets_in_env(value: dict[str, str], inheritor: str) -> dict[str, str]:
    """An `env` mapping, refused when a name looks like a secret: specs are stored with every run, so secrets
    belong in the environment raybench runs in, which `inheritor` ("the server", ...) inherits."""
    named = sorted(k for k in value if _SECRET_NAME.search(k))
    if named:
        raise ValueError(
            f"env holds secrets ({', '.join(named)}); export them where raybench runs instead: "
            f"{inheritor} the environment and raybench never records secret values"
        )
    return value

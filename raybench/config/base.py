"""The base of every spec model: unknown keys are errors, values are validated on assignment."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """A spec section: `extra="forbid"` so a misspelt key is reported, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

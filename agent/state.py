"""What the agent must remember across restarts, kept as JSON in the state directory."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

STATE_FILE_NAME = "provider.json"


class StateError(RuntimeError):
    """The state file exists but cannot be read or written."""


class AgentState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root_provider_uuid: str
    # Provider uuid -> custom traits the agent applied from the provider config.
    configured_traits: dict[str, list[str]] = Field(default_factory=dict)
    # The agent added COMPUTE_STATUS_DISABLED when it last stopped, so its next
    # start takes it away (an operator's own disable is left alone).
    disabled_by_agent: bool = False

    def configured_traits_of(self, provider_uuid: str) -> frozenset[str]:
        return frozenset(self.configured_traits.get(provider_uuid, ()))


class StateStore:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / STATE_FILE_NAME

    def load(self) -> AgentState | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise StateError(f"cannot read agent state {self.path}: {error}") from error
        try:
            return AgentState.model_validate_json(text)
        except ValidationError as error:
            raise StateError(f"agent state {self.path} is damaged: {error}") from error

    def save(self, state: AgentState) -> None:
        """Write to a temporary file then rename, so a crash never leaves half a file."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", dir=self.path.parent, prefix=".provider-", delete=False
            ) as handle:
                json.dump(state.model_dump(), handle, indent=2, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(handle.name, self.path)
        except OSError as error:
            raise StateError(f"cannot write agent state {self.path}: {error}") from error

"""Config sections for where commands run (issue 27): terminal backend and sandbox, code execution
and checkpoints. Kept out of ``config.py`` so that file stays small; it imports these.

Hermes' names where Hermes has them (``terminal.backend``, ``terminal.docker_image``,
``container_cpu``/``container_memory``, ``code_execution.timeout``/``max_tool_calls``,
``checkpoints.enabled``/``max_files``).
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

SandboxMode = Literal["workspace-write", "read-only", "off"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class SSHConfig(_Section):
    """``terminal.ssh``: one persistent connection per session (OpenSSH multiplexing)."""

    host: Optional[str] = None
    user: Optional[str] = None
    port: int = Field(default=22, ge=1, le=65535)
    key: Optional[str] = None  # private key file; None: the ssh client's defaults / agent
    connect_timeout: int = Field(default=15, ge=1)


class TerminalConfig(_Section):
    timeout: int = Field(default=180, ge=1)
    cwd: Optional[str] = None
    max_output_chars: int = Field(default=50_000, ge=1000)
    backend: Literal["local", "ssh", "docker"] = "local"
    ssh: SSHConfig = Field(default_factory=SSHConfig)
    docker_image: str = "python:3.11-slim"
    container_cpu: float = Field(default=1.0, gt=0)  # CPUs a docker session may use
    container_memory: int = Field(default=2048, ge=64)  # MB
    # None (unset): off for the owner's agents, workspace-write for confined ones (the gateway's)
    # when bubblewrap works here; an explicit mode that cannot be enforced refuses to run
    sandbox: Optional[SandboxMode] = None
    sandbox_network: bool = False
    max_processes: int = Field(default=16, ge=1)  # background processes running per session

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        """YAML reads a bare ``off`` as false (and ``on`` as true)."""
        if v is False:
            return "off"
        return "workspace-write" if v is True else v


class CodeExecutionConfig(_Section):
    timeout: int = Field(default=300, ge=1)  # seconds per script
    max_tool_calls: int = Field(default=100, ge=1)  # tool calls per script
    max_output_chars: int = Field(default=20_000, ge=500)  # what it prints, head and tail kept


class CheckpointsConfig(_Section):
    enabled: bool = True
    max_files: int = Field(default=10_000, ge=1)  # a working dir with more is not checkpointed
    max_bytes: int = Field(default=200_000_000, ge=1)  # nor one whose files weigh more

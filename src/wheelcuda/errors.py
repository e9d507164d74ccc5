"""Errors that reach people as messages.

Every failure wheelcuda expects carries what failed, the offending value, and the
fix as a command to copy. The CLI prints ``str(error)`` on stderr and exits 1; anything
else is a bug in wheelcuda, which the CLI reports as an internal error (see _cli.py).
"""

from __future__ import annotations

__all__ = ["ArchError", "CacheError", "ComponentError", "ConfigError", "HostCompilerError",
           "InterpreterError", "ToolError", "TorchError", "WheelcudaError"]


class WheelcudaError(Exception):
    """Base class: a problem the user can fix. ``fix`` is shown after the message."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        if self.fix:
            return f"{self.message}\n  fix: {self.fix}"
        return self.message


class InterpreterError(WheelcudaError):
    """The target Python is missing or is not a Python."""


class ComponentError(WheelcudaError):
    """NVIDIA components are missing, incomplete, or do not belong together."""


class TorchError(WheelcudaError):
    """torch is missing, CPU-only, or built for another CUDA major version."""


class ArchError(WheelcudaError):
    """The GPU architecture list is unknown, malformed, or not buildable."""


class HostCompilerError(WheelcudaError):
    """The host C++ compiler is missing or not accepted by this nvcc."""


class CacheError(WheelcudaError):
    """wheelcuda's cache folder cannot be used safely."""


class ToolError(WheelcudaError):
    """A child process wheelcuda needs could not run or failed."""


class ConfigError(WheelcudaError):
    """A settings file (uv.toml, pyproject.toml, uv.lock) cannot be read or written."""

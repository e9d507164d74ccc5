"""The live check shares the integration tests' fixtures (cuobjdump)."""

from tests.integration.conftest import cuobjdump

__all__ = ["cuobjdump"]

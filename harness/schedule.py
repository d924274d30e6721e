"""Fault schedules live in ``chaos.schedule``; this name stays for the CLI and tests that import it."""

from chaos.schedule import as_json, plan

__all__ = ["as_json", "plan"]

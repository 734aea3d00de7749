"""The emulator of the service: ``AnalyticsEmulator`` (see :mod:`.app`); ``python -m`` runs it (see ``__main__``).

Modules, one job each: ``server`` (HTTP plumbing), ``multipart`` (uploads, read in pieces),
``api`` (routing, auth, checks), ``handlers`` (one function per operation), ``world``/``state``/
``seed`` (the account), ``jobs``, ``exports`` with ``writers``/``xlsx``/``pdf`` (files),
``files_origin``, ``faults``, ``ratelimit``, ``permissions``, ``pagination``, ``validation``,
``errors`` (error bodies and the business rules), ``control`` (``/_emulator/`` endpoints).
"""

from __future__ import annotations

from analytics_provider.testing.emulator.app import AnalyticsEmulator

__all__ = ["AnalyticsEmulator"]

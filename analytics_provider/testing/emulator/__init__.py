"""The emulator of the service: ``AnalyticsEmulator`` (see :mod:`.app`); ``python -m`` runs it (see ``__main__``).

Modules, one job each: ``server`` (HTTP plumbing), ``api`` (routing, auth, checks), ``handlers``
(one function per operation), ``world``/``state``/``seed`` (the account), ``jobs``, ``exports``
with ``writers``/``xlsx``/``pdf`` (files), ``files_origin``, ``faults``, ``ratelimit``,
``permissions``, ``pagination``, ``validation``, ``control`` (``/_emulator/`` endpoints).
"""

from __future__ import annotations

from analytics_provider.testing.emulator.app import AnalyticsEmulator

__all__ = ["AnalyticsEmulator"]

"""Access as code: make the service's user attributes and group members follow rows of a table.

Each sync reads what the service holds, plans the changes (:mod:`.plan`) and applies them; the
operators (:mod:`analytics_provider.operators.access`) add rows from SQL, ``dry_run`` and lineage.
"""

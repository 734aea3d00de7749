"""Deliveries as code: data schedules and data alerts declared in YAML files, checked, planned and
applied (:mod:`.files`, :mod:`.check`, :mod:`.plan`; the operator and ``python -m
analytics_provider.manage``)."""

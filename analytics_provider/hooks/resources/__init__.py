"""The hook's methods by resource, one module each, in the order a reader looks for them: users,
groups, user attributes, dashboards and widgets, reports and data-set queries, data sources and
models, jobs, schedules and alerts, AML projects and tags, shareable links and embedding, webhooks
and AI. A module holds whole resources of the vendor's document (its tags).
:class:`~analytics_provider.hooks.analytics.AnalyticsHook` mixes them all in; a new operation is a
method in its resource's module."""

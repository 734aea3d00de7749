"""Refresh by impact, without I/O: which data sources, models, data sets, reports, widgets and
dashboards read a set of warehouse tables, models or data sets, and why.

:mod:`~analytics_provider.impact.tables` matches table names the way a warehouse compares them;
:mod:`~analytics_provider.impact.graph` walks from the inputs to the dashboards;
:mod:`~analytics_provider.impact.dbt` reads what a dbt run built. The reads themselves are
:meth:`AnalyticsHook.find_impacted <analytics_provider.hooks.analytics.AnalyticsHook.find_impacted>`.
"""

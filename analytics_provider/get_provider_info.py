"""What Airflow reads about this provider (entry point ``apache_airflow_provider``).

Plain data only: Airflow calls this at start-up in every process, so it imports nothing but the
package's version (its one source, also read by the build).
"""

from __future__ import annotations

from typing import Any

from analytics_provider import __version__

REGION_BASE_URLS = {  # the one table of regions: the connection form, the settings and the docs read it
    "apac": "https://secure.holistics.io/api/v2",
    "eu": "https://eu.holistics.io/api/v2",
    "us": "https://us.holistics.io/api/v2",
}
REGIONS = tuple(REGION_BASE_URLS)
DEFAULT_HEADER_NAME = "X-Service-Key"  # the API document's name; a base_url connection's default
VENDOR_HEADER_NAME = "X-Holistics-Key"  # the name the vendor's regional hosts read


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-analytics",
        "name": "Analytics Service",
        "description": "Drive the analytics service's public API v2: exports, dashboard preloads, "
        "cache busting, AML publishing, schedules, alerts, users and more.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Analytics Service",
                "external-doc-url": "https://docs.holistics.io/api",
                "tags": ["service"],
            }
        ],
        "hooks": [
            {
                "integration-name": "Analytics Service",
                "python-modules": ["analytics_provider.hooks.analytics"],
            }
        ],
        "operators": [
            {
                "integration-name": "Analytics Service",
                "python-modules": [
                    "analytics_provider.operators.analytics",
                    "analytics_provider.operators.publish",
                    "analytics_provider.operators.query",
                    "analytics_provider.operators.dbt",
                    "analytics_provider.operators.access",
                    "analytics_provider.operators.deliveries",
                    "analytics_provider.operators.refresh",
                    "analytics_provider.operators.review",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Analytics Service",
                "python-modules": ["analytics_provider.sensors.analytics"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Analytics Service",
                "python-modules": ["analytics_provider.triggers.analytics"],
            }
        ],
        "extra-links": ["analytics_provider.links.AnalyticsDashboardLink"],
        "connection-types": [
            {
                "connection-type": "analytics",
                "hook-class-name": "analytics_provider.hooks.analytics.AnalyticsHook",
                "hook-name": "Analytics Service",
                "conn-fields": {
                    "region": {
                        "label": "Region",
                        "description": "Region that holds the account's data.",
                        "schema": {"type": ["string", "null"], "enum": list(REGIONS), "default": "eu"},
                    },
                    "base_url": {
                        "label": "Base address override",
                        "description": "For a proxy or the emulator; must end with /api/v2. "
                        "Overrides the region.",
                        "schema": {"type": ["string", "null"], "format": "url"},
                    },
                    "header_name": {
                        "label": "API key header name",
                        "description": f"Header that carries the key. Leave empty: {VENDOR_HEADER_NAME} on the "
                        f"vendor's regional hosts, {DEFAULT_HEADER_NAME} on any other base address.",
                        "schema": {"type": ["string", "null"]},
                    },
                    "timeout": {
                        "label": "Read timeout (seconds)",
                        "schema": {"type": ["number", "null"], "default": 60, "minimum": 0.1, "maximum": 86400},
                    },
                    "connect_timeout": {
                        "label": "Connect timeout (seconds)",
                        "schema": {"type": ["number", "null"], "default": 10, "minimum": 0.1, "maximum": 86400},
                    },
                    "max_answer_bytes": {
                        "label": "Largest answer (bytes)",
                        "description": "A successful answer past it is refused (AnswerTooLargeError). "
                        "Leave empty: 64 MiB.",
                        "schema": {"type": ["integer", "null"], "default": 67108864, "minimum": 1,
                                   "maximum": 1073741824},
                    },
                    "max_header_bytes": {
                        "label": "Largest answer head (bytes)",
                        "description": "An answer whose status line and headers pass it is refused "
                        "(AnswerTooLargeError). Leave empty: 64 KiB.",
                        "schema": {"type": ["integer", "null"], "default": 65536, "minimum": 1024,
                                   "maximum": 16777216},
                    },
                    "max_download_bytes": {
                        "label": "Largest downloaded file (bytes)",
                        "description": "An export past it, decoded, is refused before it replaces anything. "
                        "Leave empty: 16 GiB.",
                        "schema": {"type": ["integer", "null"], "default": 17179869184, "minimum": 1,
                                   "maximum": 1099511627776},
                    },
                    "max_decode_ratio": {
                        "label": "Largest decode ratio",
                        "description": "Decoded bytes per byte received for a file the host compressed (a gzip "
                        "bomb is refused); files under 16 MiB pass. Leave empty: 100.",
                        "schema": {"type": ["number", "null"], "default": 100, "minimum": 1, "maximum": 1100},
                    },
                    "max_download_seconds": {
                        "label": "Longest download (seconds)",
                        "description": "A download (retries included) that takes longer is refused before the "
                        "file replaces anything. Leave empty: 21600 (6 hours).",
                        "schema": {"type": ["number", "null"], "default": 21600, "minimum": 1, "maximum": 604800},
                    },
                    "proxies": {
                        "label": "Proxies",
                        "description": 'Scheme to proxy URL, as JSON: {"https": "http://proxy.example:3128", '
                        '"no_proxy": "localhost"}. Leave empty: HTTP_PROXY, HTTPS_PROXY and NO_PROXY.',
                        "schema": {"type": ["string", "null"]},
                    },
                    "verify": {
                        "label": "Verify certificates",
                        "description": "true, false, or the path of a CA bundle (a private CA). Leave empty: "
                        "REQUESTS_CA_BUNDLE or SSL_CERT_FILE, else certifi's bundle.",
                        "schema": {"type": ["string", "null"]},
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "login", "port", "extra"],
                    "relabeling": {"password": "API key"},
                    "placeholders": {
                        "password": "the key from your user settings",
                        "base_url": "https://eu.holistics.io/api/v2",
                    },
                },
            }
        ],
    }

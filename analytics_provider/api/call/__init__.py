"""One API call without I/O: its events, request, exchange, retries, quota, network and settings."""

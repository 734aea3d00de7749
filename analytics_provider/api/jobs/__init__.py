"""Waiting for jobs without I/O: what a status means, following a job, batched reads."""

"""Shared test helpers: synthetic and sample artifacts, job-log readers, evaluation helpers."""

"""Workloads as users bring them, written against trainperf's public API only; the gate was not tuned on
them, so they show how it judges cases it has never seen."""

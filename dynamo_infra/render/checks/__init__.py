"""Checks on a graph before any write: the operator's webhook with the cluster's options, the names a
rendering derives, and what a graph's components need at run time."""

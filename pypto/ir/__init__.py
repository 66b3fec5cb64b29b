"""Kernel IR: nodes, verifier, printer."""

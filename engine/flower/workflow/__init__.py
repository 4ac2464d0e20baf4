"""Workflows: steps chained with lineage, goal guards, and the starter flow."""

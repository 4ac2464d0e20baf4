"""The engine's core: agent definitions, roles, guards, runtime, documents, lineage, resilience."""

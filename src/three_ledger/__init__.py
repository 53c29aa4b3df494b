"""three-ledger: a merge gate that keeps fixture, property and flake evidence apart."""

__version__ = "0.1.0"

"""kernel-ports: keeps an MLX engine's per-backend kernel dispatch honest."""

__version__ = "0.1.0"

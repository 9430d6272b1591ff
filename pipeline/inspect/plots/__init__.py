"""Static matplotlib figures, each drawn from a fit Dataset and returned (no pyplot state)."""

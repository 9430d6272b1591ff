"""The interactive plotly viewer: a fit played over time in a notebook cell or a report."""

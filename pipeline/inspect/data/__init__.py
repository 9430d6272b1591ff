"""What every view draws, computed once: checked fits, named angles, bands, tables, frames."""

"""The viewer's widgets."""

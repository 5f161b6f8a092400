"""The package's version (a leaf: the layers that report it, such as the OpenTelemetry
meters of the bus and the observers, import it from here, not from the package root)."""

__version__ = "0.1.0"

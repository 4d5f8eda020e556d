"""saltbench: a reproducible workflow for the SALT long-form uncertainty benchmark."""

__version__ = "0.1.0"

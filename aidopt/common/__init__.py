"""The bottom layer: what every other layer uses — lazy imports, options and their checks,
deadlines, logging and native-library helpers. Imports nothing above it."""

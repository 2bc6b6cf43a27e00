"""autoconv's version, in a module of its own: modules inside autoconv import it from here,
not from the package, so that none of them imports ``autoconv/__init__.py`` back."""

__version__ = "0.1.0"

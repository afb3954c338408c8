"""tinyshop: a cart, discount codes, tax, shipping and a receipt."""

__version__ = "0.3.0"

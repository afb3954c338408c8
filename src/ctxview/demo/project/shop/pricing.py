"""Discount codes, tax and shipping. Amounts are dollars as floats, rounded to cents."""

TAX_RATE = 0.08
SHIPPING = 4.99
FREE_SHIPPING_FROM = 50.00

PERCENT_CODES = {"SAVE10": 10, "SAVE25": 25}
FIXED_CODES = {"FIVEOFF": 5.00}


def apply_discount(subtotal: float, code: str) -> float:
    """The subtotal after the discount code, if any."""
    if code in PERCENT_CODES:
        return subtotal * (100 - PERCENT_CODES[code]) / 100
    if code in FIXED_CODES:
        return subtotal - FIXED_CODES[code]
    return subtotal


def shipping(subtotal: float, code: str) -> float:
    """What shipping costs for an order of this (discounted) subtotal."""
    if code == "FREESHIP" or subtotal >= FREE_SHIPPING_FROM:
        return 0.0
    return SHIPPING


def tax(amount: float) -> float:
    return round(amount * TAX_RATE, 2)

"""Every price, quantity and code against a total worked out by hand, the slow careful way."""

from shop.cart import Cart

PRICES = [0.99, 1.49, 2.50, 3.75, 4.20, 5.00, 6.30, 7.99, 9.95, 12.00,
          14.50, 19.99, 24.00, 29.95, 35.00, 42.50, 49.99, 59.00, 74.25, 99.99]
QUANTITIES = range(1, 16)
CODES = ["", "SAVE10", "SAVE25", "FIVEOFF", "FREESHIP"]


def expected_total(price: float, qty: int, code: str) -> float:
    subtotal = round(price * qty, 2)
    if code in ("SAVE10", "SAVE25"):
        percent = 10 if code == "SAVE10" else 25
        subtotal = round(subtotal * (100 - percent) / 100, 2)
    elif code == "FIVEOFF":
        subtotal = max(0.0, round(subtotal - 5.00, 2))
    taxed = round(subtotal + round(subtotal * 0.08, 2), 2)
    ship = 0.0 if code == "FREESHIP" or taxed >= 50.00 else 4.99
    return round(taxed + ship, 2)


def test_total(price, qty, code):
    cart = Cart(code=code)
    cart.add("thing", price, qty)
    assert cart.total() == expected_total(price, qty, code), (
        f"expected {expected_total(price, qty, code):.2f}, got {cart.total():.2f}"
    )


test_total.cases = [
    {"price": p, "qty": q, "code": c} for c in CODES for p in PRICES for q in QUANTITIES
]

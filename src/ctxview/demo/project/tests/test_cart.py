from shop.cart import Cart


def test_empty_cart_costs_shipping_only():
    assert Cart().total() == 4.99


def test_subtotal_adds_quantities():
    cart = Cart()
    cart.add("pen", 1.50, qty=4)
    cart.add("pad", 3.25)
    assert cart.subtotal() == 9.25


def test_free_shipping_from_fifty():
    cart = Cart()
    cart.add("lamp", 50.00)
    assert cart.total() == 54.00

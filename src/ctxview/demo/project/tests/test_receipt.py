from shop.cart import Cart
from shop.receipt import receipt


def test_receipt_lists_items_and_total():
    cart = Cart()
    cart.add("mug", 8.00, qty=2)
    text = receipt(cart)
    assert "2 x mug" in text
    assert text.splitlines()[-1].endswith("22.27")


def test_receipt_names_the_code():
    cart = Cart(code="SAVE10")
    cart.add("mug", 8.00)
    assert "Code SAVE10" in receipt(cart)

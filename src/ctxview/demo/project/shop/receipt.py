"""The receipt printed at checkout."""

from .cart import Cart


def receipt(cart: Cart) -> str:
    lines = [f"{i.qty} x {i.name:<20} {i.price * i.qty:>8.2f}" for i in cart.items]
    lines.append(f"{'Subtotal':<24} {cart.subtotal():>8.2f}")
    if cart.code:
        lines.append(f"Code {cart.code}")
    lines.append(f"{'Total':<24} {cart.total():>8.2f}")
    return "\n".join(lines)

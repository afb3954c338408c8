"""A cart of items and its total."""

from dataclasses import dataclass, field

from .pricing import apply_discount, shipping, tax


@dataclass
class Item:
    name: str
    price: float
    qty: int = 1


@dataclass
class Cart:
    items: list[Item] = field(default_factory=list)
    code: str = ""

    def add(self, name: str, price: float, qty: int = 1) -> None:
        self.items.append(Item(name, price, qty))

    def subtotal(self) -> float:
        return round(sum(i.price * i.qty for i in self.items), 2)

    def total(self) -> float:
        amt = round(apply_discount(self.subtotal(), self.code), 2)
        amt = round(amt + tax(amt), 2)
        return round(amt + shipping(amt, self.code), 2)

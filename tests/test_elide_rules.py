"""The pure rules of elision and of the context as sent (src/ctxview/rules/elide.py, context.py)."""

from __future__ import annotations

import pytest

from ctxview.rules import as_sent as ctx
from ctxview.rules import elide
from ctxview.rules.config import Config, ConfigError


@pytest.mark.parametrize(
    ("n", "keep", "stride", "want"),
    [
        (0, 8, 16, 0),
        (8, 8, 16, 0),
        (23, 8, 16, 0),
        (24, 8, 16, 16),
        (39, 8, 16, 16),
        (40, 8, 16, 32),
        (7, 2, 4, 4),
        (9, 2, 4, 4),
        (10, 2, 4, 8),
        (5, 0, 1, 5),
    ],
)
def test_boundary_is_a_staircase_of_whole_strides(
    n: int, keep: int, stride: int, want: int
) -> None:
    assert elide.boundary(n, keep, stride) == want


def test_boundary_keeps_at_least_keep_and_only_grows() -> None:
    last = 0
    for n in range(0, 500):
        b = elide.boundary(n, 8, 16)
        assert b % 16 == 0
        assert n - b >= min(n, 8)
        assert b >= last
        last = b


def test_boundary_refuses_a_stride_below_one() -> None:
    with pytest.raises(ValueError):
        elide.boundary(10, 2, 0)


def test_threshold_and_min_chars_are_strict() -> None:
    assert not elide.crossed(180_000, 180_000)
    assert elide.crossed(180_001, 180_000)
    assert not elide.elidable(2000, 2000)
    assert elide.elidable(2001, 2000)
    # Never a stub longer than what it stands for, whatever min_chars says.
    assert not elide.elidable(50, 0, stub_chars=60)
    assert elide.elidable(61, 0, stub_chars=60)


def test_stub_names_the_id_the_size_and_what_it_was() -> None:
    config = Config()
    text = elide.stub(0x1A2B, 12345, "read", "src/app.ts", config)
    assert text == "[#1a2b elided: 12,345 chars of read src/app.ts; recall #1a2b to see it]"
    assert elide.stub(0x1000, 2500, "bash", None, config) == (
        "[#1000 elided: 2,500 chars of bash; recall #1000 to see it]"
    )


def test_stub_is_a_pure_function_of_the_result() -> None:
    config = Config({"ids.digits": 6})
    one = elide.stub(0x1000, 9999, "grep", None, config)
    assert one == elide.stub(0x1000, 9999, "grep", None, Config({"ids.digits": 6}))
    assert one.startswith("[#001000 elided")
    assert one != elide.stub(0x1001, 9999, "grep", None, config)


def test_stub_template_is_config() -> None:
    config = Config({"text.elided_result": "<{ref} gone, {chars} chars>"})
    assert elide.stub(0x1000, 3000, "t", None, config) == "<#1000 gone, 3,000 chars>"


def test_elide_config_defaults_and_types() -> None:
    config = Config()
    assert config["elide.enabled"] is False
    assert (config["elide.threshold_chars"], config["elide.min_chars"]) == (180_000, 2000)
    assert (config["elide.stride"], config["elide.keep"]) == (16, 8)
    assert config["compaction.above_tokens"] == 0
    with pytest.raises(ConfigError):
        Config({"elide.enabled": "yes"})


@pytest.mark.parametrize(
    ("role", "text", "calls"),
    [
        ("user", "hello", []),
        ("user", "", []),
        ("assistant", "", ['call read {"path": "a"}']),
        ("assistant", "two\nlines", ["call t {}", "call u"]),
        ("tool", "[#1000]\nout", []),
    ],
)
def test_rendered_size_matches_render(role: str, text: str, calls: list[str]) -> None:
    call_chars = sum(1 + len(c) for c in calls)
    assert ctx.rendered_size(role, len(text), call_chars) == len(ctx.render(role, text, calls))


def test_render_forms() -> None:
    assert ctx.render("user", "hi") == "user: hi"
    assert ctx.render("assistant", "", ["call t {}"]) == "assistant:\ncall t {}"
    assert ctx.render_call("bash", '{"command": "ls"}') == 'call bash {"command": "ls"}'
    assert ctx.call_size("t", "{}") == len("\ncall t {}")
    assert ctx.serialised_size(10, 3) == 12
    assert ctx.serialised_size(0, 0) == 0


def test_tokens_are_chars_over_four_rounded_up() -> None:
    assert [ctx.estimate_tokens(c) for c in (0, 1, 4, 5, 400)] == [0, 1, 1, 2, 100]


def test_usage_from_dict_and_subset_counting() -> None:
    u = ctx.Usage.from_dict({"input_tokens": 3, "output_tokens": 5, "cache_read_tokens": 90,
                             "cache_write_tokens": 7})  # fmt: skip
    assert u is not None and u.prompt_tokens == 100
    assert u.cache_hit_ratio == pytest.approx(0.9)
    assert ctx.Usage.from_dict({"other": 1}) is None
    assert ctx.Usage.from_dict(None) is None
    # OpenAI counts cached tokens inside the input: made additive.
    assert ctx.subset_usage(1000, 800, 50) == ctx.Usage(200, 50, 800, 0)
    assert ctx.usage_of('{"usage": {"input_tokens": 4}}') == ctx.Usage(4, 0, 0, 0)
    assert ctx.usage_of("not json") is None
    assert ctx.Usage().cache_hit_ratio is None


def test_bill_and_rates_per_provider() -> None:
    config = Config()
    anthropic = ctx.rates(config, "anthropic")
    assert ctx.bill(100, 1000, 10_000, anthropic) == pytest.approx(100 + 1250 + 1000)
    openai = ctx.rates(config, "openai")
    assert ctx.bill(0, 1000, 10_000, openai) == pytest.approx(1000 + 1000)
    assert ctx.provider_of("codex") == "openai"
    assert ctx.provider_of("claude-code") == "anthropic"
    custom = ctx.rates(Config({"cost.anthropic.cache_read": 0.5}), "anthropic")
    assert custom.cache_read == 0.5


def test_compact_due_is_off_at_zero() -> None:
    assert not ctx.compact_due(10**9, 0)
    assert not ctx.compact_due(100, 100)
    assert ctx.compact_due(101, 100)

"""Settings for the whole suite.

Hypothesis: the same examples on every run (derandomize: a property failing in CI fails for
everyone, not once in a while) and no per-example deadline nor too-slow check (a loaded 2-core
machine runs an example several times slower; its speed is not what the properties test).
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ctxview",
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ctxview")

"""Shared test setup for every test folder.

Qt reads QT_QPA_PLATFORM when the first QApplication is made; setting it here,
in the root conftest that pytest imports before any test module, means no test
(core, cli or qt) ever tries to open a real display.
"""

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

# Hypothesis profiles: "ci" (the default) keeps the property suites to a few
# seconds on a two-core runner; "stress" is the long run done by hand:
#   HYPOTHESIS_PROFILE=stress python -m pytest tests/core/test_reliability.py -q
# deadline=None in both: the first example of a run pays for torch's warm-up,
# and a deadline would turn that into a flaky failure.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "stress", max_examples=10_000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Shared test setup for every test folder.

Qt reads QT_QPA_PLATFORM when the first QApplication is made; setting it here,
in the root conftest that pytest imports before any test module, means no test
(core, cli or qt) ever tries to open a real display.
"""

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

import sys

from mha_explorer.cli import main

sys.exit(main())

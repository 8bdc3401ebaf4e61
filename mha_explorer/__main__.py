import sys

from mha_explorer.launcher import main

if __name__ == "__main__":  # not when a lab training process (spawn) imports it
    sys.exit(main())

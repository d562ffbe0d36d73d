"""A plugin module that ends the process when imported, as a script does."""

import sys

sys.exit(3)

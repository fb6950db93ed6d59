"""`python -m gpuext` is the `gpuext` command."""
import sys

from .cli import main

sys.exit(main())

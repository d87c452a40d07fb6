import sys

from deteval.cli import main

sys.exit(main())

import sys

from rivet_ci.cli import main

sys.exit(main())

import sys

from autoconv.cli import main

sys.exit(main())

import sys

from autoconv.commands.main import main

sys.exit(main())

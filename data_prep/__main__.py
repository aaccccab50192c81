import sys

from data_prep.commands import main

sys.exit(main())

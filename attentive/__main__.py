import sys

from attentive.cli import main

sys.exit(main())

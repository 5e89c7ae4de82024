import sys

from conformance.runner.errors import guarded
from conformance.runner.run import PROG, main

sys.exit(guarded(main, sys.argv[1:], PROG))

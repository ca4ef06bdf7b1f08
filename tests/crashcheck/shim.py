"""Crash checker: ``python shim.py serve ...`` is ``actorbroker serve ...`` with its syncs recorded.

Run as a script (its directory comes first on sys.path, so ``powerloss``
imports as a plain module): records every fsync/fdatasync to the file named
by $CRASHCHECK_SYNC_LOG (see powerloss.py), then runs the broker's command
line in this process. Test code only: the broker itself is unchanged.
"""

import os
import sys

import powerloss  # type: ignore[import-not-found]  # next to this script, see above

if __name__ == "__main__":
    powerloss.install(os.environ[powerloss.SYNC_LOG_ENV])
    from actorbroker.cli import main

    sys.exit(main(sys.argv[1:]))

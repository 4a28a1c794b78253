"""`python -m dynamo_infra.agent --namespace NS ...`: the same as `dynamo-infra agent ...`."""

import sys

from dynamo_infra.agent.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""`python -m dynamo_infra.cli ...`: the same as `dynamo-infra ...`."""

from dynamo_infra.cli.main import entry

if __name__ == "__main__":
    entry()

"""The `dynamo-infra` command: one module per subcommand, listed in `main.COMMANDS`."""

"""One module per ``hwsim`` subcommand."""

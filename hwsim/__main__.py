from hwsim.cli import entry

entry()

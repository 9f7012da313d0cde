from hwsim.cli import main

raise SystemExit(main())

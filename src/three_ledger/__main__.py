from three_ledger.cli import main

raise SystemExit(main())

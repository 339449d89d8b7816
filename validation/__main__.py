from ._runner import main

raise SystemExit(main())

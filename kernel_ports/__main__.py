from kernel_ports.cli import main

raise SystemExit(main())

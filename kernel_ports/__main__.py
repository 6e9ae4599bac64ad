from kernel_ports.cli import entry

entry()

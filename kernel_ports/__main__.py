from kernel_ports.launch import entry

entry()

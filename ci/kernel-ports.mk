# Makefile fragment for an engine repository: `include ci/kernel-ports.mk`.
# `make verify` checks the default build configuration's rules and drift;
# `make verify-rocm` adds the ROCm view (coverage of every rocm port).
KERNEL_PORTS ?= kernel-ports
KERNEL_PORTS_REGISTRY ?= registry.yaml

.PHONY: verify verify-rocm kernel-ports-check kernel-ports-sync-check

kernel-ports-check:
	$(KERNEL_PORTS) check --registry $(KERNEL_PORTS_REGISTRY)

kernel-ports-sync-check:
	$(KERNEL_PORTS) sync --check --registry $(KERNEL_PORTS_REGISTRY)

verify: kernel-ports-check kernel-ports-sync-check

verify-rocm: verify
	$(KERNEL_PORTS) status rocm --registry $(KERNEL_PORTS_REGISTRY)

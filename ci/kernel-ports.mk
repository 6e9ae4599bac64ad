# Makefile fragment for an engine repository: `include ci/kernel-ports.mk`.
# `make verify` checks the default build configuration's rules and drift;
# `make verify-rocm` also builds every HIP body for its targets, as the ROCm
# runtime would (KP501/KP502; needs hipcc, libamdhip64-dev and rocm-device-libs,
# no GPU), then prints the ROCm porting checklist.
KERNEL_PORTS ?= kernel-ports
KERNEL_PORTS_REGISTRY ?= registry.yaml

.PHONY: verify verify-rocm kernel-ports-check kernel-ports-check-rocm kernel-ports-sync-check

kernel-ports-check:
	$(KERNEL_PORTS) check --registry $(KERNEL_PORTS_REGISTRY)

kernel-ports-sync-check:
	$(KERNEL_PORTS) sync --check --registry $(KERNEL_PORTS_REGISTRY)

verify: kernel-ports-check kernel-ports-sync-check

kernel-ports-check-rocm:
	HIP_PLATFORM=amd $(KERNEL_PORTS) check --device-compile rocm --registry $(KERNEL_PORTS_REGISTRY)

verify-rocm: kernel-ports-check-rocm kernel-ports-sync-check
	$(KERNEL_PORTS) status rocm --registry $(KERNEL_PORTS_REGISTRY)

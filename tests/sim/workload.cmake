# tests of the workload builder and step simulation

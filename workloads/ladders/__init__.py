"""The suite's ladders: each workload's reference and the optimizations it is measured against."""
